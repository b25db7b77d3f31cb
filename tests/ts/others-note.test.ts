// The note on other users' processes in Japanese and Chinese: its brackets and separator are the catalogue's
// words (（…；…）), not English punctuation glued around translated phrases. The bundle is the one JupyterLab
// makes from the built catalogue (fixtures.ts bundle).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { othersNote } from '../../labextension/src/format/table';
import { parseMessage } from '../../labextension/src/wire/protocol';
import type { SampleMessage } from '../../labextension/src/wire/types';
import { bundle, fixture, trans } from './fixtures';

const [ONE_USER, TWO_USERS] = (
  parseMessage(fixture('sample_privacy.json')) as SampleMessage
).sample.gpus;

test('a Japanese sidebar brackets and separates the users with Japanese punctuation', () => {
  const ja = bundle('ja_JP');
  assert.equal(
    othersNote(ONE_USER, ja),
    '他のユーザー: プロセス 1 個、5.8 GiB（bob: プロセス 1 個、5.8 GiB）'
  );
  assert.equal(
    othersNote(TWO_USERS, ja),
    '他のユーザー: プロセス 2 個、N/A（ユーザー不明: プロセス 1 個、N/A／mallory: プロセス 1 個、380 MiB）'
  );
});

test('a Chinese sidebar uses full-width brackets and a full-width semicolon', () => {
  assert.equal(
    othersNote(TWO_USERS, bundle('zh_CN')),
    '其他用户：2 个进程，N/A（用户未知：1 个进程，N/A；mallory：1 个进程，380 MiB）'
  );
});

test('English keeps its own brackets and semicolon', () => {
  assert.equal(
    othersNote(TWO_USERS, trans),
    'other users: 2 processes, N/A (user unknown: 1 process, N/A; mallory: 1 process, 380 MiB)'
  );
});
