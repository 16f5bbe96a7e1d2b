# Compiler flags shared by every longrun target: longrun_set_warnings(target).
add_library(longrun_compile_options INTERFACE)
target_compile_options(longrun_compile_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow=local -Wno-missing-field-initializers>)
if(LONGRUN_WERROR)
  target_compile_options(longrun_compile_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(LONGRUN_SANITIZE)
  target_compile_options(longrun_compile_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer>)
  target_link_options(longrun_compile_options INTERFACE -fsanitize=address,undefined)
endif()
