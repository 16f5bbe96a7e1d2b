# CTest bench.models_smoke: `longrun-bench models` runs a preset with its baseline and an
# ad-hoc --arch/--config model at short N, exits 0, writes one valid JSON object per line
# with the documented fields and a self-contained SVG plot; usage errors exit 2. Timings are
# never asserted.
#   cmake -DBENCH=/path/to/longrun-bench -DOUT=/tmp/dir -P models_smoke_test.cmake
if(NOT BENCH OR NOT OUT)
  message(FATAL_ERROR "pass -DBENCH=<longrun-bench executable> -DOUT=<scratch folder>")
endif()
file(MAKE_DIRECTORY "${OUT}")
set(plot "${OUT}/models_smoke.svg")
file(REMOVE "${plot}")

execute_process(COMMAND ${BENCH} models --preset fastformer-d256-l2 --n 16,33 --json - --plot ${plot}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE table)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "longrun-bench models exited ${rc}\nstdout:\n${out}\nstderr:\n${table}")
endif()
message(STATUS "table (stderr):\n${table}")

string(REGEX MATCHALL "[^\n]+" lines "${out}")
list(LENGTH lines count)
if(NOT count EQUAL 4)
  message(FATAL_ERROR "expected 4 JSON lines (baseline and model at N 16, 33), got ${count}:\n${out}")
endif()
set(seen "")
foreach(line IN LISTS lines)
  foreach(field model arch shape n batch backend isa threads median_ms min_ms max_ms tokens_per_s arena_bytes
                peak_live_bytes weight_bytes)
    string(JSON type ERROR_VARIABLE err TYPE "${line}" ${field})
    if(err)
      message(FATAL_ERROR "line is not JSON with field '${field}': ${err}\n${line}")
    endif()
  endforeach()
  foreach(field median_ms tokens_per_s arena_bytes peak_live_bytes weight_bytes threads n)
    string(JSON type TYPE "${line}" ${field})
    if(NOT type STREQUAL "NUMBER")
      message(FATAL_ERROR "'${field}' is ${type}, expected a number:\n${line}")
    endif()
  endforeach()
  string(JSON model GET "${line}" model)
  string(JSON n GET "${line}" n)
  if(model STREQUAL "fastformer-d256-l2")
    string(JSON peer GET "${line}" peer)
    string(JSON type TYPE "${line}" ratio)
    if(NOT peer STREQUAL "softmax-d256-l2" OR NOT type STREQUAL "NUMBER")
      message(FATAL_ERROR "the model's row needs peer softmax-d256-l2 and a numeric ratio:\n${line}")
    endif()
  else()
    string(JSON err ERROR_VARIABLE no_peer GET "${line}" peer)
    if(NOT no_peer)
      message(FATAL_ERROR "a baseline row has no peer:\n${line}")
    endif()
  endif()
  list(APPEND seen "${model}@${n}")
endforeach()
if(NOT seen STREQUAL "softmax-d256-l2@16;softmax-d256-l2@33;fastformer-d256-l2@16;fastformer-d256-l2@33")
  message(FATAL_ERROR "unexpected rows (baseline first): ${seen}")
endif()

file(READ "${plot}" svg)
foreach(part "<svg xmlns=\"http://www.w3.org/2000/svg\"" "fastformer-d256-l2" "softmax-d256-l2" "<polyline" "</svg>")
  string(FIND "${svg}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the plot lacks '${part}':\n${svg}")
  endif()
endforeach()

# Any registered arch with an explicit config.
execute_process(COMMAND ${BENCH} models --arch fastformer --config
                "{\"vocab_size\":50,\"hidden_size\":32,\"num_attention_heads\":4,\"num_hidden_layers\":1,\"intermediate_size\":64,\"max_position_embeddings\":64,\"num_labels\":2,\"share_layers\":true}"
                --n 7 --json - RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE table)
string(STRIP "${out}" out)
string(JSON model ERROR_VARIABLE err GET "${out}" model)
if(NOT rc EQUAL 0 OR err OR NOT model STREQUAL "fastformer")
  message(FATAL_ERROR "--arch/--config run failed (${rc}, ${err}):\n${out}\n${table}")
endif()

# Usage errors name the flag and exit 2.
foreach(args "models;--preset;no_such_preset" "models;--arch;fastformer" "models;--repeat;3"
             "models;--arch;fastformer;--config;{\"vocab_size\":1}" "models;--arch;nope;--config;{}")
  execute_process(COMMAND ${BENCH} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "longrun-bench ${args} exited ${rc}, expected 2\n${o}${e}")
  endif()
endforeach()
