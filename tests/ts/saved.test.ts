import assert from 'node:assert/strict';
import { test } from 'node:test';

import { readSeries } from '../../labextension/src/model/saved';

const series = {
  t: [1000, 2000],
  own: [1, null],
  framework: [null, null],
  others: [3, 4],
  total: [5, 5],
  budget: [6, 6],
  marks: [
    { t: 2000, ownBytes: 7, reason: '<b>x</b>', reasonSaid: { code: 'x' } },
    { t: 'soon', ownBytes: 7 }
  ],
  cells: [{ line: 'secret()' }]
};

test('a saved series reads back with N/A as NaN, its marks as the chart reads them, no cells', () => {
  const read = readSeries(series)!;
  assert.deepEqual(read.t, [1000, 2000]);
  assert.deepEqual(read.own, [1, NaN]);
  assert.deepEqual(read.marks, [
    { t: 2000, ownBytes: 7, reason: '<b>x</b>', reasonSaid: null }
  ]);
  assert.deepEqual(read.cells, []);
});

test('a saved series that is not one is refused whole', () => {
  for (const broken of [
    undefined,
    null,
    'series',
    { ...series, t: 'now' },
    { ...series, own: [1] }, // another length
    { ...series, budget: [6, '6'] },
    { ...series, total: undefined }
  ]) {
    assert.equal(readSeries(broken), null, JSON.stringify(broken));
  }
});
