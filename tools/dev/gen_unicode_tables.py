#!/usr/bin/env python3
"""Writes runtime/src/text/unicode_tables.inc: the compact Unicode data the tokenizers need.

    python3 tools/dev/gen_unicode_tables.py > runtime/src/text/unicode_tables.inc

Data comes from Python's `unicodedata` (the Unicode version is written into the table). The
tables are:
  - kCategoryRanges: sorted {first code point, flags} runs; a code point takes the flags of the
    last run starting at or before it. Flags: letter (L*), number (N*), punctuation (P*),
    nonspacing mark (Mn), "other" (Cc, Cf, Co, Cs: what BERT's clean_text drops), plus
    kBertPunctuation: the punctuation BERT splits on (P* of the Unicode version HF tokenizers
    was built with, plus every ASCII punctuation character, which includes the symbols $+<=>^`|~).
  - kLowercase: full lowercase mappings (str.lower of one code point; U+0130 maps to two).
  - kDecomposition: full canonical decompositions (NFD of one code point) except Hangul
    syllables, which unicode.cpp decomposes algorithmically.
  - kCombiningClassRanges: runs of equal nonzero canonical combining class, for NFD reordering.

HF tokenizers (the Rust crate) takes P* and the nonspacing marks from the unicode_categories
crate, which predates Unicode 10; the code points where Python's newer data and HF disagree are
listed in HF_* below (found by probing tokenizers 0.23.3 on every code point), so that our output
matches HF's. Code points unassigned in this Unicode version but assigned in HF's newer regex and
lowercase data (Oniguruma, Rust std) are the one remaining difference.
"""
import sys
import unicodedata

# Probed from tokenizers 0.23.3 (BertPreTokenizer / BertNormalizer on every code point), as
# inclusive (first, last) ranges. Only code points Python's data and HF's disagree on.
HF_NOT_PUNCTUATION = [
    (0x061D, 0x061D), (0x09FD, 0x09FD), (0x0A76, 0x0A76), (0x0C77, 0x0C77), (0x0C84, 0x0C84),
    (0x1B7D, 0x1B7E), (0x2E43, 0x2E4F), (0x2E52, 0x2E5D), (0x10EAD, 0x10EAD), (0x10F55, 0x10F59),
    (0x10F86, 0x10F89), (0x1144B, 0x1144F), (0x1145A, 0x1145B), (0x1145D, 0x1145D), (0x11660, 0x1166C),
    (0x116B9, 0x116B9), (0x1183B, 0x1183B), (0x11944, 0x11946), (0x119E2, 0x119E2), (0x11A3F, 0x11A46),
    (0x11A9A, 0x11A9C), (0x11A9E, 0x11AA2), (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8),
    (0x11FFF, 0x11FFF), (0x12FF1, 0x12FF2), (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2), (0x1E95E, 0x1E95F)]
HF_EXTRA_PUNCTUATION = [(0x166D, 0x166D), (0x111C9, 0x111C9)]  # P* in older Unicode
HF_NOT_OTHER = [(0x0890, 0x0891), (0x08E2, 0x08E2), (0x110CD, 0x110CD), (0x13430, 0x13438)]
HF_NOT_MN = [
    (0x07FD, 0x07FD), (0x0898, 0x089F), (0x08CA, 0x08E1), (0x09FE, 0x09FE), (0x0AFA, 0x0AFF),
    (0x0B55, 0x0B55), (0x0C04, 0x0C04), (0x0C3C, 0x0C3C), (0x0D00, 0x0D00), (0x0D3B, 0x0D3C),
    (0x0D81, 0x0D81), (0x0EBA, 0x0EBA), (0x180F, 0x180F), (0x1885, 0x1886), (0x1ABF, 0x1ACE),
    (0x1DF6, 0x1DFB), (0xA82C, 0xA82C), (0xA8C5, 0xA8C5), (0xA8FF, 0xA8FF), (0xA9BD, 0xA9BD),
    (0x10D24, 0x10D27), (0x10EAB, 0x10EAC), (0x10F46, 0x10F50), (0x10F82, 0x10F85), (0x11070, 0x11070),
    (0x11073, 0x11074), (0x110C2, 0x110C2), (0x111C9, 0x111C9), (0x111CF, 0x111CF), (0x1123E, 0x1123E),
    (0x1133B, 0x1133B), (0x11438, 0x1143F), (0x11442, 0x11444), (0x11446, 0x11446), (0x1145E, 0x1145E),
    (0x1182F, 0x11837), (0x11839, 0x1183A), (0x1193B, 0x1193C), (0x1193E, 0x1193E), (0x11943, 0x11943),
    (0x119D4, 0x119D7), (0x119DA, 0x119DB), (0x119E0, 0x119E0), (0x11A01, 0x11A0A), (0x11A33, 0x11A38),
    (0x11A3B, 0x11A3E), (0x11A47, 0x11A47), (0x11A51, 0x11A56), (0x11A59, 0x11A5B), (0x11A8A, 0x11A96),
    (0x11A98, 0x11A99), (0x11C30, 0x11C36), (0x11C38, 0x11C3D), (0x11C3F, 0x11C3F), (0x11C92, 0x11CA7),
    (0x11CAA, 0x11CB0), (0x11CB2, 0x11CB3), (0x11CB5, 0x11CB6), (0x11D31, 0x11D36), (0x11D3A, 0x11D3A),
    (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45), (0x11D47, 0x11D47), (0x11D90, 0x11D91), (0x11D95, 0x11D95),
    (0x11D97, 0x11D97), (0x11EF3, 0x11EF4), (0x16F4F, 0x16F4F), (0x16FE4, 0x16FE4), (0x1CF00, 0x1CF2D),
    (0x1CF30, 0x1CF46), (0x1E000, 0x1E006), (0x1E008, 0x1E018), (0x1E01B, 0x1E021), (0x1E023, 0x1E024),
    (0x1E026, 0x1E02A), (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF), (0x1E944, 0x1E94A)]
HF_EXTRA_MN = [(0x1734, 0x1734)]  # Mn in older Unicode, Mc since


def in_ranges(cp, ranges):
    return any(a <= cp <= b for a, b in ranges)

LETTER, NUMBER, PUNCT, MN, OTHER, BERT_PUNCT = 1, 2, 4, 8, 16, 32
ASCII_PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'


def flags(cp):
    cat = unicodedata.category(chr(cp))
    f = 0
    if cat[0] == 'L':
        f |= LETTER
    if cat[0] == 'N':
        f |= NUMBER
    if cat[0] == 'P':
        f |= PUNCT
        if not in_ranges(cp, HF_NOT_PUNCTUATION):
            f |= BERT_PUNCT
    if (cp < 128 and chr(cp) in ASCII_PUNCT) or in_ranges(cp, HF_EXTRA_PUNCTUATION):
        f |= BERT_PUNCT
    if (cat == 'Mn' and not in_ranges(cp, HF_NOT_MN)) or in_ranges(cp, HF_EXTRA_MN):
        f |= MN
    if cat in ('Cc', 'Cf', 'Co', 'Cs') and not in_ranges(cp, HF_NOT_OTHER):
        f |= OTHER
    return f


def runs(values):
    out, last = [], None
    for cp, v in enumerate(values):
        if v != last:
            out.append((cp, v))
            last = v
    return out


def mapping_table(name, mapping):
    lines = [f'constexpr MappingEntry {name}[] = {{']
    flat = []
    for cp in sorted(mapping):
        seq = mapping[cp]
        lines.append(f'    {{0x{cp:04X}, {len(flat)}, {len(seq)}}},')
        flat.extend(seq)
    lines.append('};')
    lines.append(f'constexpr char32_t {name}Data[] = {{')
    for i in range(0, len(flat), 10):
        lines.append('    ' + ', '.join(f'0x{c:04X}' for c in flat[i:i + 10]) + ',')
    lines.append('};')
    return lines


def main():
    n = 0x110000
    cat_runs = runs([flags(cp) for cp in range(n)])
    ccc_runs = runs([unicodedata.combining(chr(cp)) for cp in range(n)])
    lower, decomp = {}, {}
    for cp in range(n):
        if 0xD800 <= cp < 0xE000:
            continue
        ch = chr(cp)
        lo = ch.lower()
        if lo != ch:
            lower[cp] = [ord(c) for c in lo]
        if not (0xAC00 <= cp < 0xAC00 + 11172):
            d = unicodedata.normalize('NFD', ch)
            if d != ch:
                decomp[cp] = [ord(c) for c in d]
    out = [
        '// Generated by tools/dev/gen_unicode_tables.py from Python unicodedata '
        f'(Unicode {unicodedata.unidata_version}). Do not edit.',
        '// clang-format off',
        f'constexpr const char* kUnicodeVersion = "{unicodedata.unidata_version}";',
        'constexpr CategoryRange kCategoryRanges[] = {',
    ]
    for cp, f in cat_runs:
        out.append(f'    {{0x{cp:04X}, {f}}},')
    out.append('};')
    out.append('constexpr CombiningClassRange kCombiningClassRanges[] = {')
    for i, (cp, c) in enumerate(ccc_runs):
        end = ccc_runs[i + 1][0] - 1 if i + 1 < len(ccc_runs) else n - 1
        if c:
            out.append(f'    {{0x{cp:04X}, 0x{end:04X}, {c}}},')
    out.append('};')
    out += mapping_table('kLowercase', lower)
    out += mapping_table('kDecomposition', decomp)
    out.append('// clang-format on')
    sys.stdout.write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main()
