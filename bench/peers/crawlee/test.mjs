// Tests of the Crawlee peer's helpers: node --test (in this directory).
import assert from 'node:assert/strict';
import test from 'node:test';
import { parseResolve, refreshURL } from './lib.mjs';

test('refreshURL', () => {
    for (const [content, want] of [
        ['0; url=/a', '/a'],
        ["3;URL='b'", 'b'],
        ['5, url = "/c"', '/c'],
        ['0', null],
        ['0; x=/a', null],
        ['0; url=', null],
    ]) {
        assert.equal(refreshURL(content), want, content);
    }
});

test('parseResolve', () => {
    const t = parseResolve('# c\n\nA.test:80:127.0.0.1\nb.test:81:[::1]\n');
    assert.deepEqual([...t.entries()], [['a.test', '127.0.0.1'], ['b.test', '::1']]);
    assert.throws(() => parseResolve('a.test:80\n'), /cannot use resolve line 1/);
    assert.throws(() => parseResolve('a.test:80:\n'), /want HOST:PORT:ADDR/);
});
