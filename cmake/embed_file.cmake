# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed_file.cmake
# Writes `const unsigned char NAME[]` and `const unsigned long NAME_size` from IN
# (an empty array when IN does not exist).
if(EXISTS "${IN}")
  file(READ "${IN}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
else()
  set(hex "")
endif()
file(WRITE "${OUT}" "// Generated from ${IN}.\nconst unsigned char ${NAME}[] = {${hex} 0x00};\nconst unsigned long ${NAME}_size = sizeof ${NAME} - 1;\n")
