#include <functional>
#include <type_traits>

#include <catch2/catch.hpp>
#include <gpuplan/units.h>

using namespace gpuplan;

// Units cannot be mixed by accident.
static_assert(!std::is_invocable_v<std::plus<>, Bytes, Seconds>);
static_assert(!std::is_invocable_v<std::plus<>, Params, Tokens>);
static_assert(!std::is_convertible_v<double, Bytes>);
static_assert(!std::is_convertible_v<Bytes, double>);
static_assert(gb(1) < gib(1));

TEST_CASE("units: decimal and binary prefixes", "[units]") {
  CHECK(gb(80).in(unit::bytes) == 80e9);
  CHECK(gib(1).in(unit::bytes) == 1073741824.0);
  CHECK(mib(2).in(unit::bytes) == 2097152.0);
}

TEST_CASE("units: the only mixed operators", "[units]") {
  // 1e15 FLOPs at 1e12 FLOP/s take 1000 s; 3600 s at $2/h cost $2.
  CHECK((Flops(1e15) / FlopRate(1e12)).in(unit::seconds) == 1000.0);
  CHECK((Seconds(3600) * UsdPerHour(2.0)).in(unit::usd) == 2.0);
  CHECK((Bytes(4.8e12) / ByteRate(4.8e12)).in(unit::seconds) == 1.0);
  CHECK(Bytes(6) / Bytes(3) == 2.0);
}
