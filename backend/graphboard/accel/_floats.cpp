// Python's repr() and '.6f' formatting of a double, fast.
//
// CPython finds a float's shortest round-tripping digits with David Gay's dtoa, about a
// microsecond each; a compare shows about a million of them. libstdc++'s std::to_chars
// finds the same digits (the shortest that round-trip, the closest of those to the value)
// with Ryu, ten times faster. Only the layout below is Python's: fixed notation for
// 1e-4 <= |x| < 1e16, else d.ddde+XX; tests check the result against repr() itself.
#include <charconv>
#include <cmath>
#include <cstring>

namespace {

// Python's layout of the digits d1d2...dn with the value 0.d1d2...dn x 10^point.
int python_layout(char *out, bool negative, const char *digits, int count, int point) {
    char *at = out;
    if (negative) *at++ = '-';
    if (point <= -4 || point > 16) {
        *at++ = digits[0];
        if (count > 1) {
            *at++ = '.';
            std::memcpy(at, digits + 1, count - 1);
            at += count - 1;
        }
        int exponent = point - 1;
        *at++ = 'e';
        *at++ = exponent < 0 ? '-' : '+';
        if (exponent < 0) exponent = -exponent;
        if (exponent < 10) *at++ = '0';
        auto written = std::to_chars(at, at + 4, exponent);
        at = written.ptr;
    } else if (point <= 0) {
        *at++ = '0';
        *at++ = '.';
        for (int i = 0; i < -point; i++) *at++ = '0';
        std::memcpy(at, digits, count);
        at += count;
    } else if (point >= count) {
        std::memcpy(at, digits, count);
        at += count;
        for (int i = 0; i < point - count; i++) *at++ = '0';
        *at++ = '.';
        *at++ = '0';
    } else {
        std::memcpy(at, digits, point);
        at += point;
        *at++ = '.';
        std::memcpy(at, digits + point, count - point);
        at += count - point;
    }
    return static_cast<int>(at - out);
}

}  // namespace

extern "C" {

// repr(value) into out (at least 32 bytes); returns the length.
int graphboard_float_repr(double value, char *out) {
    if (std::isnan(value)) {
        std::memcpy(out, "nan", 3);
        return 3;
    }
    if (std::isinf(value)) {
        if (value < 0) {
            std::memcpy(out, "-inf", 4);
            return 4;
        }
        std::memcpy(out, "inf", 3);
        return 3;
    }
    bool negative = std::signbit(value);
    if (value == 0) {
        const char *zero = negative ? "-0.0" : "0.0";
        int length = negative ? 4 : 3;
        std::memcpy(out, zero, length);
        return length;
    }
    char scientific[40];
    auto written = std::to_chars(scientific, scientific + sizeof scientific, std::fabs(value),
                                 std::chars_format::scientific);
    // scientific is d[.ddd]e(+|-)XX
    char digits[24];
    int count = 0;
    const char *at = scientific;
    for (; at < written.ptr && *at != 'e'; at++) {
        if (*at != '.') digits[count++] = *at;
    }
    int exponent = 0;
    std::from_chars(at + 1 + (at[1] == '+'), written.ptr, exponent);
    return python_layout(out, negative, digits, count, exponent + 1);
}

// f"{value:.6f}" into out (at least 330 bytes for the largest doubles); returns the length.
int graphboard_float_fixed6(double value, char *out) {
    if (std::isnan(value) || std::isinf(value)) return graphboard_float_repr(value, out);
    auto written = std::to_chars(out, out + 330, value, std::chars_format::fixed, 6);
    return static_cast<int>(written.ptr - out);
}

}  // extern "C"
