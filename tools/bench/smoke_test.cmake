# CTest bench.smoke: longrun-bench runs, exits 0 and writes one valid JSON object per line
# with the documented fields, provenance included; usage errors exit 2. Timings are never asserted (speed is
# measured by benchmarks, not by tests).
#   cmake -DBENCH=/path/to/longrun-bench -P smoke_test.cmake
if(NOT BENCH)
  message(FATAL_ERROR "pass -DBENCH=<longrun-bench executable>")
endif()

execute_process(COMMAND ${BENCH} ops --quick --op add,softmax --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE table)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "longrun-bench exited ${rc}\nstdout:\n${out}\nstderr:\n${table}")
endif()
message(STATUS "table (stderr):\n${table}")

# The provenance every JSON line ends with (provenance.h).
set(provenance commit cpu cpu_isa compiler build_type date)

# One list item per line (a ';' inside a JSON string would split an item; none is expected,
# and a split line fails to parse below, so it cannot pass silently).
string(REGEX MATCHALL "[^\n]+" all_lines "${out}")

# Fails unless `line` is a JSON object with every one of FIELDS, each of NUMBERS a number;
# `what` names the line in the message.
function(require_json line what)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "FIELDS;NUMBERS")
  foreach(field IN LISTS arg_FIELDS)
    string(JSON type ERROR_VARIABLE err TYPE "${line}" ${field})
    if(err)
      message(FATAL_ERROR "${what} is not JSON with field '${field}': ${err}\n${line}")
    endif()
  endforeach()
  foreach(field IN LISTS arg_NUMBERS)
    string(JSON type TYPE "${line}" ${field})
    if(NOT type STREQUAL "NUMBER")
      message(FATAL_ERROR "${what}: '${field}' is ${type}, expected a number:\n${line}")
    endif()
  endforeach()
endfunction()

# The machine check's probe lines (machine_check.h): five at the start and five at the end,
# none on a machine without AVX2 + FMA (no probe kernels there).
function(check_probe_lines lines expected_whens)
  set(whens "")
  foreach(line IN LISTS lines)
    require_json("${line}" "probe line" FIELDS probe when isa rounds unit min median max threads
                 ${provenance} NUMBERS rounds min median max threads)
    string(JSON when GET "${line}" when)
    list(APPEND whens ${when})
  endforeach()
  list(LENGTH lines n)
  if(NOT n EQUAL 0 AND NOT whens STREQUAL "${expected_whens}")
    message(FATAL_ERROR "probe lines: expected 'when' ${expected_whens}, got ${whens}")
  endif()
endfunction()

set(lines "")
set(probe_lines "")
foreach(line IN LISTS all_lines)
  if(line MATCHES "^{\"probe\":")
    list(APPEND probe_lines "${line}")
  else()
    list(APPEND lines "${line}")
  endif()
endforeach()
check_probe_lines("${probe_lines}" "start;start;start;start;start;end;end;end;end;end")
list(LENGTH lines count)
if(NOT count EQUAL 4)
  message(FATAL_ERROR "expected 4 JSON lines (add, softmax, each with peers memcpy and store_copy), got ${count}:\n${out}")
endif()

set(seen "")
foreach(line IN LISTS lines)
  require_json("${line}" "ops line" FIELDS op shape backend isa threads median_ms gflops gbps peer peer_median_ms
               ratio ${provenance} NUMBERS median_ms gbps peer_median_ms ratio threads)
  string(JSON op GET "${line}" op)
  string(JSON peer GET "${line}" peer)
  list(APPEND seen "${op}/${peer}")
endforeach()
if(NOT seen STREQUAL "add/memcpy;add/store_copy;softmax/memcpy;softmax/store_copy")
  message(FATAL_ERROR "expected add, softmax in that order, each with memcpy then store_copy, got ${seen}")
endif()

# machine: one JSON object per probe; a round count below 5 is a usage error.
execute_process(COMMAND ${BENCH} machine --rounds 5 --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE table)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "longrun-bench machine exited ${rc}\nstdout:\n${out}\nstderr:\n${table}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
check_probe_lines("${lines}" "machine;machine;machine;machine;machine")
execute_process(COMMAND ${BENCH} machine --rounds 2 RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "longrun-bench machine --rounds 2 exited ${rc}, expected 2 (usage error)")
endif()

# tokenizer: one JSON object per tokenizer (the two goldens by default); a missing text file
# exits 1.
execute_process(COMMAND ${BENCH} tokenizer --mib 0.01 --repeat 1 --warmup 0 --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE table)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "longrun-bench tokenizer exited ${rc}\nstdout:\n${out}\nstderr:\n${table}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
list(LENGTH lines count)
if(NOT count EQUAL 2)
  message(FATAL_ERROR "longrun-bench tokenizer: expected 2 JSON lines, found ${count}:\n${out}")
endif()
foreach(line IN LISTS lines)
  require_json("${line}" "tokenizer" FIELDS tokenizer model description text ${provenance}
               NUMBERS bytes threads warmup repeat tokens median_ms min_ms max_ms mb_per_s tokens_per_s)
endforeach()
execute_process(COMMAND ${BENCH} tokenizer --text /no/such/file --mib 0.01 RESULT_VARIABLE rc OUTPUT_QUIET
                ERROR_VARIABLE e)
if(NOT rc EQUAL 1 OR NOT e MATCHES "/no/such/file")
  message(FATAL_ERROR "longrun-bench tokenizer --text /no/such/file exited ${rc}, expected 1 naming it\n${e}")
endif()

# pool: one JSON object per gap with the documented fields (a join latency may be null when
# the worker never joined, so only its presence is checked).
execute_process(COMMAND ${BENCH} pool --gaps 0,200 --rounds 5 --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE table)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "longrun-bench pool exited ${rc}\nstdout:\n${out}\nstderr:\n${table}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
list(LENGTH lines count)
if(NOT count EQUAL 2)
  message(FATAL_ERROR "expected 2 JSON lines from pool (gaps 0, 200), got ${count}:\n${out}")
endif()
foreach(line IN LISTS lines)
  require_json("${line}" "pool line" FIELDS gap_us threads chunks chunk_us rounds median_ms ideal_ms threads_used
               join_p50_us join_p90_us missed stacked ${provenance} NUMBERS gap_us threads median_ms ideal_ms threads_used missed
               stacked)
endforeach()

# pool --baseline: the plain condition-variable wake-up's fields too (it always wakes, so its
# latencies are numbers).
execute_process(COMMAND ${BENCH} pool --gaps 100 --rounds 5 --baseline --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE table)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "longrun-bench pool --baseline exited ${rc}\nstdout:\n${out}\nstderr:\n${table}")
endif()
require_json("${out}" "pool --baseline line" FIELDS stacked cv_wake_p50_us cv_wake_p90_us cv_stacked
             NUMBERS cv_wake_p50_us cv_wake_p90_us cv_stacked)
if(NOT table MATCHES "cv p50us")
  message(FATAL_ERROR "pool --baseline: the table has no cv columns:\n${table}")
endif()

# A pinned pool (--cpus: the calling thread on the first CPU this process may use) runs.
set(first_cpu 0)
if(EXISTS /proc/self/status)
  file(STRINGS /proc/self/status allowed REGEX "^Cpus_allowed_list:")
  string(REGEX MATCH "[0-9]+" first_cpu "${allowed}")
endif()
execute_process(COMMAND ${BENCH} ops --quick --op add --repeat 5 --cpus ${first_cpu} RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "longrun-bench ops --cpus ${first_cpu} exited ${rc}\n${o}${e}")
endif()

# Spinning workers (--spin-us): an op on two spinning threads, and a pool run, say so.
execute_process(COMMAND ${BENCH} ops --quick --op add --repeat 5 --threads 2 --spin-us 500 RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "workers spin 500 us")
  message(FATAL_ERROR "longrun-bench ops --spin-us 500 exited ${rc}\n${o}${e}")
endif()
# --paired: every peer line carries the round-by-round ratio's fields, over --repeat rounds,
# and the table says what its last column is; a spinning pool pairs too.
execute_process(COMMAND ${BENCH} ops --quick --op add --repeat 5 --threads 2 --spin-us 200 --paired --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE table)
if(NOT rc EQUAL 0 OR NOT table MATCHES "paired: median \\(min-max\\) of 5 round-by-round ratios, each round 1 untimed")
  message(FATAL_ERROR "longrun-bench ops --paired exited ${rc}\nstdout:\n${out}\nstderr:\n${table}")
endif()
string(REGEX MATCHALL "[^\n]+" all_lines "${out}")
set(paired_count 0)
foreach(line IN LISTS all_lines)
  if(NOT line MATCHES "^{\"probe\":")
    require_json("${line}" "paired ops line" FIELDS peer ratio paired_ratio paired_ratio_min paired_ratio_max
                 paired_rounds NUMBERS ratio paired_ratio paired_ratio_min paired_ratio_max paired_rounds)
    string(JSON rounds GET "${line}" paired_rounds)
    if(NOT rounds EQUAL 5)
      message(FATAL_ERROR "paired ops line: paired_rounds ${rounds}, expected 5 (--repeat 5)\n${line}")
    endif()
    math(EXPR paired_count "${paired_count} + 1")
  endif()
endforeach()
if(NOT paired_count EQUAL 2)
  message(FATAL_ERROR "expected 2 paired ops lines (add with memcpy and store_copy), got ${paired_count}:\n${out}")
endif()
execute_process(COMMAND ${BENCH} pool --gaps 0,200 --rounds 5 --spin-us 1000 RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "workers spin 1000 us")
  message(FATAL_ERROR "longrun-bench pool --spin-us 1000 exited ${rc}\n${o}${e}")
endif()

# --sparse-keys K: sparse_attention's keys come from the first K rows, and the shape says so;
# a K below the case's k fails that case by name (exit 1).
execute_process(COMMAND ${BENCH} ops --quick --op sparse_attention --n 256 --sparse-keys 32 --repeat 5 --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "\"shape\":\"B1 H8 N256 hd64 k13 keys<32\"")
  message(FATAL_ERROR "longrun-bench ops --sparse-keys 32 exited ${rc}\n${o}${e}")
endif()
execute_process(COMMAND ${BENCH} ops --quick --op sparse_attention --n 256 --sparse-keys 8 --repeat 5
                RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 1 OR NOT o MATCHES "--sparse-keys 8: .* needs 13 .. 256")
  message(FATAL_ERROR "longrun-bench ops --sparse-keys 8 exited ${rc}, expected 1 naming the range\n${o}${e}")
endif()

# --precision: the matmul cases with a prepacked weight run at f32, bf16 and int8 (each bf16
# and int8 row with the peer longrun-f32, or skipped below AVX2), attention's two GEMMs at f32
# alone; every line says its precision.
execute_process(COMMAND ${BENCH} ops --quick --op matmul --precision f32,bf16,int8 --repeat 5 --warmup 0 --json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE table)
if(NOT rc EQUAL 0 OR NOT table MATCHES "precision f32,bf16,int8")
  message(FATAL_ERROR "longrun-bench ops --precision f32,bf16,int8 exited ${rc}\nstdout:\n${out}\nstderr:\n${table}")
endif()
string(REGEX MATCHALL "[^\n]+" all_lines "${out}")
set(runs "")
set(with_f32_peer "")
foreach(line IN LISTS all_lines)
  if(line MATCHES "^{\"probe\":")
    continue()
  endif()
  require_json("${line}" "precision ops line" FIELDS op shape precision threads ${provenance})
  string(JSON shape GET "${line}" shape)
  string(JSON precision GET "${line}" precision)
  string(JSON skipped ERROR_VARIABLE not_skipped GET "${line}" skipped)
  string(JSON peer ERROR_VARIABLE no_peer GET "${line}" peer)
  if(NOT not_skipped)
    set(precision "${precision}-skipped")
  elseif(peer STREQUAL "longrun-f32")
    require_json("${line}" "longrun-f32 line" NUMBERS median_ms peer_median_ms ratio)
    list(APPEND with_f32_peer "${shape}/${precision}")
  endif()
  list(APPEND runs "${shape}/${precision}")
endforeach()
list(REMOVE_DUPLICATES runs)
set(expected "")
foreach(w "[1536,512]" "[2048,512]" "[512,2048]" "[512,512]")
  string(REGEX REPLACE "^\\[([0-9]+),([0-9]+)\\]$" "\\2" in "${w}")
  foreach(p f32 bf16 int8)
    list(APPEND expected "x[128,${in}]*W${w}^T/${p}")
  endforeach()
endforeach()
list(APPEND expected "8x [128,64]*[128,64]^T/f32" "8x [128,128]*[128,64]/f32")
string(REPLACE "bf16-skipped" "bf16" runs_any "${runs}")
string(REPLACE "int8-skipped" "int8" runs_any "${runs_any}")
if(NOT runs_any STREQUAL "${expected}")
  message(FATAL_ERROR "--precision f32,bf16,int8: expected the runs\n${expected}\ngot\n${runs}")
endif()
foreach(run IN LISTS runs)
  list(FIND with_f32_peer "${run}" at)
  if(run MATCHES "/(bf16|int8)$" AND at EQUAL -1)
    message(FATAL_ERROR "--precision: ${run} has no longrun-f32 peer line:\n${out}")
  endif()
endforeach()

# Usage errors name the flag and exit 2.
foreach(args "ops;--repeat;3" "ops;--op;no_such_op" "ops;--backend;nope" "ops;--n;12x" "nope"
             "ops;--cpus;x" "ops;--cpus;65535;--op;add" "ops;--backend;reference;--cpus;0"
             "ops;--spin-us;1000001" "ops;--backend;reference;--spin-us;10" "ops;--sparse-keys;0" "ops;--precision;fp16" "pool;--spin-us;-1"
             "pool;--rounds;2" "pool;--gaps;1,x" "pool;--cpus;x" "pool;--bogus" "tokenizer;--mib;0"
             "tokenizer;--repeat;0" "tokenizer;--bogus")
  execute_process(COMMAND ${BENCH} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "longrun-bench ${args} exited ${rc}, expected 2\n${o}${e}")
  endif()
endforeach()
