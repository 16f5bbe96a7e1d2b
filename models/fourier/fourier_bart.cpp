// arch "fourier-bart": the "bart" config fields and parameter names (seq2seq/bart.cpp) plus the
// encoder's filter fields, with fairseq positions and padding (fourier_bart.h).
#include "fourier/fourier_bart.h"

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "seq2seq/encoder_decoder.h"
#include "seq2seq/families.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_fourier_bart_config(std::string_view config_json) {
  const std::string what = "fourier-bart config";
  LR_ASSIGN_OR_RETURN(ConfigReader r, ConfigReader::parse(config_json, what));
  nlohmann::json j;
  LR_ASSIGN_OR_RETURN(Seq2SeqSpec s, read_bart_fields(r, "fourier-bart", &j));
  LR_RETURN_IF_ERROR(
      r.filter_layers("dct_layers", "dct_percentage", s.encoder_layers, &s.filter_layers, &s.filter_ratio));
  LR_ASSIGN_OR_RETURN(const bool global_residual, r.boolean_or("global_residual", true));
  LR_ASSIGN_OR_RETURN(const bool lowpass, r.boolean_or("dct_lowpass", true));
  if (!global_residual && !s.filter_layers.empty())
    return unsupported(what +
                       ": field 'global_residual': false leaves the encoder output shorter than its mask "
                       "(the official decoder asserts); every released script uses true");
  if (!lowpass) return unsupported(what + ": field 'dct_lowpass': only the low-pass filter (true) exists");
  LR_RETURN_IF_ERROR(r.finish());
  // fairseq make_positions rows = max + pad + 1 = HF's max + 2 for pad 1: the same table shape.
  s.positions = PositionKind::learned_fairseq;
  s.padding_from_tokens = true;
  j["dct_layers"] = s.filter_layers;
  if (!s.filter_layers.empty()) j["dct_percentage"] = s.filter_ratio;
  j["global_residual"] = global_residual;
  j["dct_lowpass"] = lowpass;
  s.config_json = j.dump();
  return make_encoder_decoder(std::move(s));
}

}  // namespace longrun::models
