// Strong quantity types: a value enters and leaves naming its unit, and units never mix by accident.
#pragma once
#include <compare>
#include <cstdint>

namespace gpuplan {

namespace unit {
inline constexpr struct Byte {} bytes;
inline constexpr struct Param {} params;
inline constexpr struct Token {} tokens;
inline constexpr struct Flop {} flop;
inline constexpr struct FlopPerSecond {} flop_per_s;
inline constexpr struct BytePerSecond {} bytes_per_s;
inline constexpr struct Second {} seconds;
inline constexpr struct Usd {} usd;
inline constexpr struct UsdPerHour {} usd_per_hour;
}  // namespace unit

template <class Unit, class Rep = double>
class Quantity {
 public:
  using rep = Rep;
  constexpr Quantity() = default;
  constexpr explicit Quantity(Rep v) : v_(v) {}
  constexpr Rep in(Unit) const { return v_; }
  constexpr auto operator<=>(const Quantity&) const = default;
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.v_ + b.v_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.v_ - b.v_); }
  constexpr Quantity& operator+=(Quantity b) { v_ += b.v_; return *this; }
  constexpr Quantity& operator-=(Quantity b) { v_ -= b.v_; return *this; }
  friend constexpr Quantity operator*(Rep k, Quantity q) { return Quantity(k * q.v_); }
  friend constexpr Quantity operator*(Quantity q, Rep k) { return Quantity(q.v_ * k); }
  friend constexpr Quantity operator/(Quantity q, Rep k) { return Quantity(q.v_ / k); }
  friend constexpr double operator/(Quantity a, Quantity b) { return double(a.v_) / double(b.v_); }

 private:
  Rep v_{};
};

using Bytes = Quantity<unit::Byte>;
using Params = Quantity<unit::Param, std::int64_t>;  // an exact count, its own kind
using Tokens = Quantity<unit::Token, std::int64_t>;
using Flops = Quantity<unit::Flop>;
using FlopRate = Quantity<unit::FlopPerSecond>;
using ByteRate = Quantity<unit::BytePerSecond>;
using Seconds = Quantity<unit::Second>;
using Usd = Quantity<unit::Usd>;
using UsdPerHour = Quantity<unit::UsdPerHour>;

// The only operators that mix units.
constexpr Seconds operator/(Flops f, FlopRate r) { return Seconds(f.in(unit::flop) / r.in(unit::flop_per_s)); }
constexpr Seconds operator/(Bytes b, ByteRate r) { return Seconds(b.in(unit::bytes) / r.in(unit::bytes_per_s)); }
constexpr Usd operator*(Seconds t, UsdPerHour p) { return Usd(t.in(unit::seconds) / 3600.0 * p.in(unit::usd_per_hour)); }

// Decimal and binary prefixes are separate functions, never a mode.
constexpr Bytes gb(double x) { return Bytes(x * 1e9); }
constexpr Bytes gib(double x) { return Bytes(x * 1073741824.0); }
constexpr Bytes mib(double x) { return Bytes(x * 1048576.0); }

// n elements of `bytes_per_element` each (bytes_per_element may be fractional for packed formats).
constexpr Bytes elements(double n, double bytes_per_element) { return Bytes(n * bytes_per_element); }
constexpr Bytes elements(Params n, double bytes_per_element) {
  return Bytes(double(n.in(unit::params)) * bytes_per_element);
}

}  // namespace gpuplan
