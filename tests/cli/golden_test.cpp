// The golden outputs (tests/data/golden/outputs.txt, written by tools/golden.py) replayed in-process: every
// command's exit status, stdout and stderr byte for byte. The sanitizer build runs this instead of golden.py, which
// starts a process per command: there a process costs ~60 ms to start and to check for leaks (316 commands: ~46
// CPU-seconds as processes, ~6 s here), and one leak check at the end of this process covers them all. Hidden ([.]):
// the Release build runs golden.py on the binary itself.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "../test_support.h"

namespace {

struct Recorded {
  std::vector<std::string> args;
  int rc = -1;
  std::string out, err;
};

// tools/golden.py's line format: "### [args as JSON]", "rc N", "stdout" / "stderr", each line of a stream behind
// "| ", and "\ no newline at end" after a stream's last line when it has no final newline.
std::vector<Recorded> read_golden(std::istream& in) {
  std::vector<Recorded> all;
  std::string* stream = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("### ", 0) == 0) {
      all.emplace_back().args = nlohmann::json::parse(line.substr(4)).get<std::vector<std::string>>();
      stream = nullptr;
    } else if (line.rfind("rc ", 0) == 0) {
      all.back().rc = std::stoi(line.substr(3));
    } else if (line == "stdout" || line == "stderr") {
      stream = line == "stdout" ? &all.back().out : &all.back().err;
    } else if (line.rfind("| ", 0) == 0 && stream) {
      *stream += line.substr(2) + "\n";
    } else if (line == "\\ no newline at end" && stream && !stream->empty()) {
      stream->pop_back();
    } else {
      FAIL("outputs.txt: unexpected line " << line);
    }
  }
  return all;
}

}  // namespace

TEST_CASE("golden: every recorded command gives the recorded output", "[.golden]") {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(gpuplan::test::data).parent_path().parent_path();  // the commands' paths start there
  std::ifstream in(root / "tests" / "data" / "golden" / "outputs.txt");
  REQUIRE(in);
  const std::vector<Recorded> recorded = read_golden(in);
  const fs::path cwd = fs::current_path();
  fs::current_path(root);
  int commands = 0, differ = 0;
  for (const Recorded& want : recorded) {
    const auto& args = want.args;
    const auto got = gpuplan::test::run_cli(args);
    ++commands;
    const bool same = int(got.code) == want.rc && got.out == want.out && got.err == want.err;
    if (same) continue;
    ++differ;
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    INFO(cmd);
    CHECK(int(got.code) == want.rc);
    // Each stream from a little before its first difference, as tools/golden.py shows them.
    for (const auto& [now, was] : {std::pair{got.err, want.err}, std::pair{got.out, want.out}}) {
      const std::size_t at = std::size_t(std::mismatch(now.begin(), now.end(), was.begin(), was.end()).first - now.begin());
      const std::size_t from = at > 80 ? at - 80 : 0;
      CHECK(now.substr(from, 160) == was.substr(from, 160));
    }
    if (differ == 5) break;  // enough to see what changed
  }
  fs::current_path(cwd);
  CHECK(commands > 300);
  CHECK(differ == 0);
}
