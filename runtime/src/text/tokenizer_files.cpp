// Hugging Face "slow tokenizer" files: vocab.txt (WordPiece) or vocab.json + merges.txt
// (byte-level BPE), with tokenizer_config.json and special_tokens_map.json for options.
#include <sys/stat.h>

#include "text/json_fields.h"
#include "text/tokenizer_impl.h"

namespace longrun::text {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Lines of `text` without their line ending and trailing whitespace (as HF's
// WordPiece::read_file trims them); a final newline does not make an empty last line.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    while (!line.empty() && std::string_view(" \t\r\v\f").find(line.back()) != std::string_view::npos)
      line.remove_suffix(1);
    lines.push_back(line);
    pos = end + 1;
  }
  return lines;
}

struct SpecialNames {
  std::string unk, cls, sep, pad, mask;
  bool mask_lstrip = false;  // RoBERTa's <mask> swallows the space before it
};

// A token written as {"content": ..., "lstrip": true} (transformers' AddedToken form).
void read_mask_lstrip(const Json& j, SpecialNames* names) {
  const auto it = j.find("mask_token");
  if (it != j.end() && it->is_object() && it->contains("lstrip") && (*it)["lstrip"].is_boolean())
    names->mask_lstrip = (*it)["lstrip"].get<bool>();
}

// tokenizer_config.json and special_tokens_map.json, when present.
Status read_configs(const std::string& dir, TokenizerSpec* spec, SpecialNames* names) {
  const std::string config_path = dir + "/tokenizer_config.json";
  if (exists(config_path)) {
    LR_ASSIGN_OR_RETURN(std::string text, read_text_file(config_path, size_t{16} << 20));
    LR_ASSIGN_OR_RETURN(Json config, parse_json(text, config_path));
    LR_RETURN_IF_ERROR(read_field(config, "do_lower_case", config_path, &spec->lowercase));
    spec->strip_accents = spec->lowercase;  // null strip_accents follows lowercase, as in BERT
    LR_RETURN_IF_ERROR(read_field(config, "strip_accents", config_path, &spec->strip_accents));
    LR_RETURN_IF_ERROR(
        read_field(config, "tokenize_chinese_chars", config_path, &spec->handle_chinese_chars));
    LR_RETURN_IF_ERROR(read_field(config, "add_prefix_space", config_path, &spec->add_prefix_space));
    for (auto [key, out] : {std::pair{"unk_token", &names->unk},
                            {"cls_token", &names->cls},
                            {"sep_token", &names->sep},
                            {"pad_token", &names->pad},
                            {"mask_token", &names->mask}})
      LR_RETURN_IF_ERROR(read_field(config, key, config_path, out));
    read_mask_lstrip(config, names);
  }
  const std::string map_path = dir + "/special_tokens_map.json";
  if (exists(map_path)) {
    LR_ASSIGN_OR_RETURN(std::string text, read_text_file(map_path, size_t{16} << 20));
    LR_ASSIGN_OR_RETURN(Json map, parse_json(text, map_path));
    for (auto [key, out] : {std::pair{"unk_token", &names->unk},
                            {"cls_token", &names->cls},
                            {"sep_token", &names->sep},
                            {"pad_token", &names->pad},
                            {"mask_token", &names->mask}})
      LR_RETURN_IF_ERROR(read_field(map, key, map_path, out));
    read_mask_lstrip(map, names);
  }
  return {};
}

// The special tokens become added tokens (matched in raw text) and the post-processor:
// cls ... sep.
void apply_specials(const SpecialNames& names, TokenizerSpec* spec) {
  std::unordered_map<std::string, int64_t> ids;
  for (size_t i = 0; i < spec->vocab.size(); ++i) ids.emplace(spec->vocab[i], int64_t(i));
  for (const std::string* name : {&names.pad, &names.unk, &names.cls, &names.sep, &names.mask}) {
    const auto it = ids.find(*name);
    if (it == ids.end()) continue;
    bool duplicate = false;
    for (const AddedToken& a : spec->added_tokens) duplicate |= a.content == *name;
    if (!duplicate)
      spec->added_tokens.push_back(
          {*name, it->second, true, names.mask_lstrip && name == &names.mask, false});
  }
  if (ids.contains(names.cls) && ids.contains(names.sep)) {
    spec->prefix_ids = {ids.at(names.cls)};
    spec->suffix_ids = {ids.at(names.sep)};
  }
}

Result<TokenizerSpec> read_wordpiece(const std::string& dir) {
  TokenizerSpec spec;
  spec.model = TokenizerModel::wordpiece;
  SpecialNames names{"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"};
  LR_RETURN_IF_ERROR(read_configs(dir, &spec, &names));
  const std::string path = dir + "/vocab.txt";
  LR_ASSIGN_OR_RETURN(std::string text, read_text_file(path, size_t{256} << 20));
  for (std::string_view line : lines_of(text)) {
    if (spec.vocab.size() >= kMaxVocabSize)
      return format_error(path + ": more than " + std::to_string(kMaxVocabSize) + " tokens");
    spec.vocab.emplace_back(line);
  }
  spec.unk_token = names.unk;
  apply_specials(names, &spec);
  return spec;
}

Result<TokenizerSpec> read_byte_level_bpe(const std::string& dir) {
  TokenizerSpec spec;
  spec.model = TokenizerModel::byte_level_bpe;
  spec.lowercase = spec.strip_accents = spec.clean_text = spec.handle_chinese_chars = false;
  SpecialNames names{"<unk>", "<s>", "</s>", "<pad>", "<mask>"};
  LR_RETURN_IF_ERROR(read_configs(dir, &spec, &names));
  spec.lowercase = spec.strip_accents = false;  // a byte-level BPE has no normaliser
  const std::string vocab_path = dir + "/vocab.json";
  LR_ASSIGN_OR_RETURN(std::string vocab_text, read_text_file(vocab_path, size_t{256} << 20));
  LR_ASSIGN_OR_RETURN(Json vocab, parse_json(vocab_text, vocab_path));
  LR_ASSIGN_OR_RETURN(spec.vocab, read_vocab_object(vocab, vocab_path));
  const std::string merges_path = dir + "/merges.txt";
  LR_ASSIGN_OR_RETURN(std::string merges_text, read_text_file(merges_path, size_t{256} << 20));
  size_t line_number = 0;
  for (std::string_view line : lines_of(merges_text)) {
    ++line_number;
    if (line.empty() || line.starts_with("#version")) continue;
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos)
      return format_error(merges_path + ": line " + std::to_string(line_number) +
                          ": expected two tokens separated by one space, found '" + std::string(line) + "'");
    if (spec.merges.size() >= kMaxMerges)
      return format_error(merges_path + ": more than " + std::to_string(kMaxMerges) + " merges");
    spec.merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  }
  for (const std::string& t : spec.vocab)
    if (t == names.unk) spec.unk_token = names.unk;
  apply_specials(names, &spec);
  return spec;
}

}  // namespace

Result<TokenizerSpec> read_vocab_directory(const std::string& dir) {
  if (exists(dir + "/vocab.txt")) return read_wordpiece(dir);
  if (exists(dir + "/vocab.json") && exists(dir + "/merges.txt")) return read_byte_level_bpe(dir);
  return not_found(dir +
                   ": no tokenizer found (expected tokenizer.json, vocab.txt, or vocab.json and merges.txt)");
}

}  // namespace longrun::text
