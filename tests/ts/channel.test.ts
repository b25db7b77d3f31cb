// The sidebar's link to a kernel (labextension/src/model/channel.ts) through a restart: the one this page asks for
// (JupyterLab's 'restarting' status) and one done elsewhere (another tab, the REST API), which this page hears
// only as a status from a new kernel process (a new session id) on iopub.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fixture } from './fixtures';
import { FakeKernel, channelOn } from './kernel-fixture';

const hello = () => fixture('hello.json'); // a fresh one each time: reading one fills in the schema's defaults in place
const comm = () => ({ isDisposed: false, send: () => undefined });
const settled = () => new Promise(resolve => setImmediate(resolve));

test('a restart done elsewhere is said as a restart, and the new process is asked to stream once', async () => {
  const kernel = new FakeKernel();
  const { channel, done } = channelOn(kernel);
  try {
    kernel.open(comm(), hello(), 'kernel-1');
    kernel.status('busy', 'kernel-1');
    kernel.status('idle', 'kernel-1');
    await settled();
    assert.deepEqual([channel.state, kernel.executed.length], ['streaming', 0]);

    kernel.status('starting', 'kernel-2');
    assert.equal(channel.state, 'restarting');
    await settled();
    assert.equal(kernel.executed.length, 1);
    kernel.status('busy', 'kernel-2');
    kernel.status('idle', 'kernel-2'); // JupyterLab's 'idle' while restarting: the request is already on its way
    await settled();
    assert.deepEqual(
      [channel.state, kernel.executed.length],
      ['restarting', 1]
    );

    kernel.open(comm(), hello(), 'kernel-2');
    kernel.replies[0]({ status: 'ok' });
    kernel.status('idle', 'kernel-2');
    await settled();
    assert.deepEqual([channel.state, kernel.executed.length], ['streaming', 1]);
  } finally {
    done();
  }
});

test('the old process’s answer to a request to stream is forgotten after a restart', async () => {
  const kernel = new FakeKernel();
  const { channel, done } = channelOn(kernel);
  try {
    kernel.open(comm(), hello(), 'kernel-1');
    void channel.start(); // the toolbar's reconnect, just before the kernel restarts elsewhere
    await settled();
    kernel.status('starting', 'kernel-2');
    await settled();
    assert.equal(kernel.executed.length, 2); // not held back by the first, which the old process never answers
    kernel.replies[0]({
      status: 'error',
      ename: 'KeyboardInterrupt',
      evalue: ''
    });
    await settled();
    assert.equal(channel.state, 'restarting'); // not 'failed': that was the old process
    kernel.open(comm(), hello(), 'kernel-2');
    kernel.replies[1]({ status: 'ok' });
    await settled();
    assert.equal(channel.state, 'streaming');
  } finally {
    done();
  }
});

test('a restart this page asked for is told by JupyterLab, and the stream starts again once the kernel is idle', async () => {
  const kernel = new FakeKernel();
  const { channel, done } = channelOn(kernel);
  try {
    kernel.open(comm(), hello(), 'kernel-1');
    kernel.status('restarting', 'server'); // jupyter_server's own message, under its session
    kernel.status('starting', 'kernel-2');
    await settled();
    assert.deepEqual(
      [channel.state, kernel.executed.length],
      ['restarting', 0]
    );
    kernel.status('idle', 'kernel-2');
    await settled();
    assert.deepEqual(
      [channel.state, kernel.executed.length],
      ['restarting', 1]
    );
    kernel.open(comm(), hello(), 'kernel-2');
    assert.equal(channel.state, 'streaming');
  } finally {
    done();
  }
});

test('a kernel whose stream comes under another session than its statuses is not reconnected in a loop', async () => {
  const kernel = new FakeKernel();
  const { channel, done } = channelOn(kernel);
  try {
    kernel.open(comm(), hello(), 'stream');
    kernel.status('idle', 'status');
    await settled();
    assert.equal(kernel.executed.length, 1); // taken for a restart once
    kernel.open(comm(), hello(), 'stream'); // not the session the restart was told by
    kernel.status('busy', 'status');
    kernel.status('idle', 'status');
    await settled();
    assert.deepEqual([channel.state, kernel.executed.length], ['streaming', 1]);
  } finally {
    done();
  }
});
