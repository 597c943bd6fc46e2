import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  CLAIM_ALPHABET,
  CLAIM_TOKEN_LENGTH,
  formatClaimToken,
  generateClaimToken,
  normaliseClaimToken,
} from '../../../../src/services/devices/claim-tokens/code.ts';

const symbol = fc.constantFrom(...CLAIM_ALPHABET.split(''));
const storedToken = fc.array(symbol, { minLength: CLAIM_TOKEN_LENGTH, maxLength: CLAIM_TOKEN_LENGTH }).map((symbols) => symbols.join(''));

describe('claim token codes', () => {
  it('uses 32 symbols without the look-alikes 0, O, 1 and I', () => {
    assert.equal(new Set(CLAIM_ALPHABET).size, 32);
    for (const lookAlike of '0O1I') assert.equal(CLAIM_ALPHABET.includes(lookAlike), false);
  });

  it('generates 12 symbols of the alphabet, printed XXXX-XXXX-XXXX', () => {
    for (let index = 0; index < 200; index++) {
      const token = generateClaimToken();
      assert.match(token, /^[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{12}$/);
      assert.match(formatClaimToken(token), /^[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{4}(-[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{4}){2}$/);
    }
  });

  it('draws every symbol at every position with about equal frequency (no bias, no pattern)', () => {
    const samples = 20_000;
    const counts = Array.from({ length: CLAIM_TOKEN_LENGTH }, () => new Map<string, number>());
    const seen = new Set<string>();
    for (let index = 0; index < samples; index++) {
      const token = generateClaimToken();
      seen.add(token);
      [...token].forEach((char, position) => counts[position]!.set(char, (counts[position]!.get(char) ?? 0) + 1));
    }
    assert.equal(seen.size, samples, 'no repeats in 20 000 draws of 60 bits');
    const expected = samples / 32;
    for (const position of counts) {
      assert.equal(position.size, 32);
      // Chi-square with 31 degrees of freedom: 80 is far beyond the 0.99999 quantile (~68).
      const chiSquare = [...position.values()].reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
      assert.ok(chiSquare < 80, `chi-square ${chiSquare.toFixed(1)}`);
    }
  });

  it('reads back what was printed, whatever the case, dashes and spaces', () => {
    fc.assert(
      fc.property(storedToken, fc.boolean(), fc.array(fc.constantFrom('-', ' ', '--'), { maxLength: 4 }), (token, lower, noise) => {
        let typed = formatClaimToken(token);
        if (lower) typed = typed.toLowerCase();
        typed = noise.reduce((text, piece, index) => `${text.slice(0, index * 3)}${piece}${text.slice(index * 3)}`, typed);
        assert.equal(normaliseClaimToken(typed), token);
      }),
    );
  });

  it('refuses anything that cannot be a token', () => {
    for (const input of ['', 'ABCD-EFGH-JKL', 'ABCD-EFGH-JKLMN', 'ABCD-EFGH-JKL0', 'ABCD-EFGH-JKLO', 'ABCD-EFGH-JKL1', 'ABCD-EFGH-JKLI', 'ABCD_EFGH_JKLM', 'ÀBCD-EFGH-JKLM']) {
      assert.equal(normaliseClaimToken(input), undefined, input);
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (input) => {
        const result = normaliseClaimToken(input);
        if (result !== undefined) assert.match(result, /^[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{12}$/);
      }),
    );
  });
});
