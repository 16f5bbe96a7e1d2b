# CTest bench.memory_bound: the peak resident memory of Fastformer and the Combiner (fixed and
# axial; bidirectional through the --scale sweep with its baseline, causal through --arch) at
# D 512, 6 layers, 2 threads stays within the bound `longrun-bench models` checks, weights +
# arena + inputs/outputs + 64 MiB (model_report.h): every row has "memory_ok": true where the
# peak is known. The --scale rows carry "sweep":"scale", the progress lines go to stderr, and
# tools/bench/perf_doc.py renders them as the scaling section with its SVG plot. Short N, one
# run each: a check of memory, not a measurement.
#   cmake -DBENCH=/path/to/longrun-bench -DOUT=/tmp/dir [-DPYTHON=python3] -P memory_bound_test.cmake
if(NOT BENCH OR NOT OUT)
  message(FATAL_ERROR "pass -DBENCH=<longrun-bench executable> -DOUT=<scratch folder>")
endif()
file(MAKE_DIRECTORY "${OUT}")
set(N 512)

# Checks every JSON line of `out` against the bound; `expect` is the number of lines.
function(check_rows out expect what)
  string(REGEX MATCHALL "[^\n]+" lines "${out}")
  list(LENGTH lines count)
  if(NOT count EQUAL expect)
    message(FATAL_ERROR "${what}: expected ${expect} JSON lines, got ${count}:\n${out}")
  endif()
  foreach(line IN LISTS lines)
    string(JSON model GET "${line}" model)
    string(JSON err ERROR_VARIABLE none GET "${line}" error)
    if(NOT none)
      message(FATAL_ERROR "${what}: ${model} failed: ${err}")
    endif()
    string(JSON ok TYPE "${line}" memory_ok)
    if(ok STREQUAL "NULL")
      message(STATUS "${model}: peak RSS unknown here (no writable /proc/self/clear_refs); not checked")
      continue()
    endif()
    string(JSON ok GET "${line}" memory_ok)
    string(JSON rss GET "${line}" peak_rss_bytes)
    string(JSON bound GET "${line}" memory_bound_bytes)
    string(JSON workspace GET "${line}" workspace_bytes)
    if(NOT ok)
      message(FATAL_ERROR "${what}: ${model} at N ${N}: peak RSS ${rss} bytes over the bound ${bound} "
                          "(workspace ${workspace}):\n${line}")
    endif()
    message(STATUS "${model}: peak RSS ${rss} <= bound ${bound} (workspace ${workspace})")
  endforeach()
endfunction()

set(scale_json "${OUT}/scale.jsonl")
execute_process(COMMAND ${BENCH} models --scale --preset fastformer-d512-l6,combiner-fixed-d512-l6,combiner-axial-d512-l6
                        --n ${N} --threads 2 --repeat 1 --warmup 0 --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "longrun-bench models --scale exited ${rc}\n${err}")
endif()
file(WRITE "${scale_json}" "${out}")
check_rows("${out}" 4 "--scale")
foreach(part "[1/4] lra-text-vanilla N ${N}" "[4/4] combiner-axial-d512-l6 N ${N}")
  string(FIND "${err}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no progress line '${part}' on stderr:\n${err}")
  endif()
endforeach()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
foreach(line IN LISTS lines)
  string(JSON sweep GET "${line}" sweep)
  if(NOT sweep STREQUAL "scale")
    message(FATAL_ERROR "a --scale row without \"sweep\":\"scale\":\n${line}")
  endif()
endforeach()

foreach(form fixed axial)
  set(config "{\"vocab_size\":512,\"emb_dim\":512,\"num_heads\":8,\"qkv_dim\":512,\"mlp_dim\":2048,\"num_layers\":6,\"max_len\":${N},\"max_seg_len\":128,\"causal\":true,\"attention\":\"${form}\"}")
  execute_process(COMMAND ${BENCH} models --arch combiner --config ${config} --n ${N} --threads 2 --repeat 5
                          --warmup 0 --json -
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "longrun-bench models (causal ${form}) exited ${rc}\n${err}")
  endif()
  check_rows("${out}" 1 "causal combiner-${form}")
endforeach()

# Usage errors of the sweep's flags exit 2.
foreach(args "--scale;--arch;fastformer;--config;{}" "--max-n;4096" "--repeat;1" "--scale;--preset;attn-dense"
             "--no-baseline" "--scale;--pytorch;--save-models;/tmp")
  execute_process(COMMAND ${BENCH} models ${args} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "longrun-bench models ${args}: exit ${rc}, expected 2 (usage error)")
  endif()
endforeach()

# The performance page's scaling section and plot from those rows.
if(NOT PYTHON)
  find_program(PYTHON NAMES python3)
endif()
if(PYTHON)
  get_filename_component(here "${CMAKE_CURRENT_LIST_FILE}" DIRECTORY)
  execute_process(COMMAND ${PYTHON} ${here}/perf_doc.py ${scale_json} -o ${OUT}/performance.md
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "perf_doc.py exited ${rc}: ${err}")
  endif()
  file(READ "${OUT}/performance.md" page)
  file(READ "${OUT}/performance-scaling.svg" svg)
  foreach(part "## Scaling with the sequence length" "](performance-scaling.svg)" "| `fastformer-d512-l6` | `lra-text-vanilla` | ${N} |")
    string(FIND "${page}" "${part}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "the page lacks '${part}':\n${page}")
    endif()
  endforeach()
  foreach(part "<svg xmlns=\"http://www.w3.org/2000/svg\"" "combiner-axial-d512-l6" "<polyline" "peak RSS" "</svg>")
    string(FIND "${svg}" "${part}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "the scaling plot lacks '${part}':\n${svg}")
    endif()
  endforeach()
else()
  message(STATUS "no python3: perf_doc.py's scaling section not checked")
endif()
