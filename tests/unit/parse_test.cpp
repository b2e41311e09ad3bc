#include <catch2/catch.hpp>
#include <gpuplan/names.h>
#include <gpuplan/parse.h>

using namespace gpuplan;

TEST_CASE("parse_params: suffixes are decimal", "[parse]") {
  CHECK(parse_params("7B").in(unit::params) == 7'000'000'000);
  CHECK(parse_params("1.5B").in(unit::params) == 1'500'000'000);
  CHECK(parse_params("125M").in(unit::params) == 125'000'000);
  CHECK(parse_params("2T").in(unit::params) == 2'000'000'000'000);
  CHECK(parse_params("70K").in(unit::params) == 70'000);
  CHECK(parse_params("405e9").in(unit::params) == 405'000'000'000);
  CHECK(parse_params("8030261248").in(unit::params) == 8'030'261'248);
}

TEST_CASE("parse_params: bad input is an InputError naming the value", "[parse]") {
  for (const char* bad : {"-3", "7Q", "", "B", "0", "0B", "7BB", "nan", "inf", "1e400", "2e15", "12"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_params(bad), InputError);
  }
  CHECK_THROWS_WITH(parse_params("7Q"), Catch::Contains("7Q") && Catch::Contains("K, M, B or T"));
}

TEST_CASE("parse_bytes: GB is 1e9, GiB is 2^30", "[parse]") {
  CHECK(parse_bytes("80GB").in(unit::bytes) == 80e9);
  CHECK(parse_bytes("80GiB").in(unit::bytes) == 80.0 * 1073741824.0);
  CHECK(parse_bytes("512MiB").in(unit::bytes) == 512.0 * 1048576.0);
  CHECK(parse_bytes("1.5TB").in(unit::bytes) == 1.5e12);
  CHECK(parse_bytes("4096").in(unit::bytes) == 4096.0);
  CHECK_THROWS_AS(parse_bytes("80XB"), InputError);
  CHECK_THROWS_AS(parse_bytes("-1GB"), InputError);
}

TEST_CASE("parse_tokens", "[parse]") {
  CHECK(parse_tokens("2T").in(unit::tokens) == 2'000'000'000'000);
  CHECK(parse_tokens("300B").in(unit::tokens) == 300'000'000'000);
  CHECK_THROWS_AS(parse_tokens("x"), InputError);
}

TEST_CASE("parse_duration and parse_fraction", "[parse]") {
  CHECK(parse_duration("30d").in(unit::seconds) == 30 * 86400);
  CHECK(parse_duration("12h").in(unit::seconds) == 43200);
  CHECK(parse_duration("90min").in(unit::seconds) == 5400);
  CHECK(parse_duration("50ms").in(unit::seconds) == Approx(0.05));
  CHECK(parse_duration("45").in(unit::seconds) == 45);
  for (const char* bad : {"", "3x", "-1d", "0s", "d"}) CHECK_THROWS_AS(parse_duration(bad), InputError);
  CHECK(parse_fraction("10%") == Approx(0.10));
  CHECK(parse_fraction("0.25") == Approx(0.25));
  CHECK(parse_fraction("0%") == 0);
  for (const char* bad : {"120%", "1.5", "ten", "5x"}) CHECK_THROWS_AS(parse_fraction(bad), InputError);
}

TEST_CASE("parse_sweep: lists, doubling and stepped ranges, binary k", "[parse]") {
  using V = std::vector<std::int64_t>;
  CHECK(gpuplan::parse_sweep("1..64", "--batch") == V{1, 2, 4, 8, 16, 32, 64});
  CHECK(gpuplan::parse_sweep("4k..128k", "--context") == V{4096, 8192, 16384, 32768, 65536, 131072});
  CHECK(gpuplan::parse_sweep("3..10", "--batch") == V{3, 6, 10});  // the end is always a point
  CHECK(gpuplan::parse_sweep("512..2k+512", "--seq") == V{512, 1024, 1536, 2048});
  CHECK(gpuplan::parse_sweep("8,1,8,2k", "--batch") == V{1, 8, 2048});  // sorted, once each
  CHECK(gpuplan::parse_sweep("7", "--batch") == V{7});
  CHECK(gpuplan::parse_sweep("1M", "--context") == V{1048576});
}

TEST_CASE("parse_sweep: bad values are an InputError naming the flag", "[parse]") {
  for (const char* bad : {"", ",", "1,", "0", "1.5", "-4", "1..", "..8", "64..1", "1..8+0", "5x", "1..300+1", "2e9"}) {
    INFO(bad);
    CHECK_THROWS_WITH(gpuplan::parse_sweep(bad, "--batch"), Catch::Contains("--batch"));
  }
}

TEST_CASE("parse_length: k and M are binary, whole numbers only", "[parse]") {
  CHECK(parse_length("4k", "e") == 4096);
  CHECK(parse_length("128K", "e") == 131072);
  CHECK(parse_length("1M", "e") == 1048576);
  CHECK(parse_length("2048", "e") == 2048);
  CHECK(parse_length("1.5k", "e") == 1536);
  CHECK(parse_length("0", "e", 0) == 0);
  for (const char* bad : {"0", "-4", "4x", "1.3k", "", "2e9", "k"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_length(bad, "e"), InputError);
  }
}

TEST_CASE("name_key: case and punctuation do not count, version dots do", "[names]") {
  CHECK(name_key("H100 SXM") == "h100sxm");
  CHECK(name_key("h100-sxm") == "h100sxm");
  CHECK(name_key("Llama-3.1-8B") == "llama3.18b");
  CHECK(name_key("llama3.1:8b") == "llama3.18b");
  CHECK(same_name("RTX_4090", "rtx-4090"));
  CHECK_FALSE(same_name("llama-3.1-8b", "llama-3-18b"));
}

TEST_CASE("edit_distance: a swap of neighbours is one edit", "[names]") {
  CHECK(edit_distance("train", "train") == 0);
  CHECK(edit_distance("trian", "train") == 1);
  CHECK(edit_distance("infre", "infer") == 1);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("did_you_mean: the close names, closest first, none when nothing is close", "[names]") {
  const std::vector<NameCandidate> known = {{"train", {"train"}}, {"infer", {"infer"}}, {"plan", {"plan"}},
                                           {"mi300x", {"mi300x"}}, {"mi325x", {"mi325x"}}};
  CHECK(did_you_mean("trian", known) == "did you mean train?");
  CHECK(did_you_mean("mi300", known) == "did you mean mi300x?");
  CHECK(did_you_mean("mi3", known) == "did you mean mi300x or mi325x?");
  CHECK(did_you_mean("zzzzzz", known).empty());
  CHECK(did_you_mean("", known).empty());
}
