// Python 3 `str` semantics over UTF-8 std::string: templates index, slice, strip, split and case-map
// strings by code point exactly as Python does, and print numbers and strings the way `str()` and
// `repr()` do, because chat templates are rendered byte for byte like Jinja2 renders them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::text::jinja::pystr {

// UTF-8 <-> code points. Decoding throws a Template error on malformed input.
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view cps);
void append_utf8(std::string& out, char32_t cp);
bool is_ascii(std::string_view s);
// Number of code points (Python len()).
size_t length(std::string_view s);
// Byte offset of code point `index` (0 <= index <= length).
size_t byte_offset(std::string_view s, size_t index);
// Code point index of byte offset `off` (a character boundary).
size_t cp_index(std::string_view s, size_t off);

// Character classes as Python's str methods define them.
bool is_space(char32_t cp);
bool is_alpha(char32_t cp);
bool is_decimal(char32_t cp);
bool is_digit(char32_t cp);
bool is_numeric(char32_t cp);
bool is_alnum(char32_t cp);
bool is_word(char32_t cp);  // re's \w
bool is_printable(char32_t cp);
bool is_lower_cased(char32_t cp);
bool is_upper_cased(char32_t cp);
bool is_line_break(char32_t cp);  // separators of str.splitlines

// str methods.
std::string lower(std::string_view s);
std::string upper(std::string_view s);
std::string title(std::string_view s);       // str.title
std::string capitalize(std::string_view s);  // str.capitalize
std::string swapcase(std::string_view s);
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view rep, int64_t count);
// Code point index of the first/last occurrence within [start, end) code points, or -1.
int64_t find(std::string_view s, std::string_view sub, int64_t start, std::optional<int64_t> end, bool reverse);
int64_t count(std::string_view s, std::string_view sub);
bool starts_with(std::string_view s, std::string_view p);
bool ends_with(std::string_view s, std::string_view p);
// Pads with `fill` (one code point) to `width` code points; align is '<', '>' or '^' (str.center's bias).
std::string pad(std::string_view s, int64_t width, char32_t fill, char align);
bool pred_all(std::string_view s, bool (*pred)(char32_t));  // false for empty strings
bool is_lower(std::string_view s);                        // str.islower
bool is_upper(std::string_view s);                        // str.isupper
bool is_title(std::string_view s);                        // str.istitle

// repr() of a str: quotes chosen and characters escaped as CPython does.
std::string repr(std::string_view s);
// repr()/str() of a float: shortest round-trip digits, "1e+20", "1.0", "inf", "nan".
std::string float_repr(double v);

}  // namespace ds4::text::jinja::pystr
