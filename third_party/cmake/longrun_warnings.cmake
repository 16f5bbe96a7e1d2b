# Compiler flags shared by every longrun target: longrun_set_warnings(target).
add_library(longrun_compile_options INTERFACE)
target_compile_options(longrun_compile_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow=local -Wno-missing-field-initializers>)
# GCC 12 reports -Wrestrict false positives inside libstdc++'s string concatenation at -O2+
# (GCC bug 105329); the warning says nothing about our code there.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
  target_compile_options(longrun_compile_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
if(LONGRUN_WERROR)
  target_compile_options(longrun_compile_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(LONGRUN_SANITIZE STREQUAL "thread")
  target_compile_options(longrun_compile_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -fno-omit-frame-pointer>)
  target_link_options(longrun_compile_options INTERFACE -fsanitize=thread)
elseif(LONGRUN_SANITIZE)
  target_compile_options(longrun_compile_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer>)
  target_link_options(longrun_compile_options INTERFACE -fsanitize=address,undefined)
endif()
