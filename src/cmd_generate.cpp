// gpuplan generate man|bash|zsh: the man page and completions, from the same option table as --help.
#include <algorithm>
#include <functional>
#include <string>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app.h"

namespace gpuplan::cli {

void setup_generate(CLI::App& app, GenerateOptions& o) {
  auto* cmd = app.add_subcommand("generate", "");  // hidden: build-time generator of gpuplan.1 and completions
  cmd->group("");
  cmd->add_option("what", o.what, "man | bash | zsh")->required();
}

namespace {
std::string roff(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '-') out += "\\-";
    else out += c;
  }
  return out;
}

std::vector<const CLI::App*> commands(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  std::function<void(const CLI::App*)> walk = [&](const CLI::App* a) {
    for (const auto* s : a->get_subcommands({})) {
      if (s->get_name() == "generate") continue;
      out.push_back(s);
      walk(s);
    }
  };
  walk(&app);
  // Deeper commands first, so `case` patterns match "hardware list" before "hardware *".
  std::stable_sort(out.begin(), out.end(), [](const CLI::App* a, const CLI::App* b) {
    auto depth = [](const CLI::App* x) { int d = 0; for (; x->get_parent(); x = x->get_parent()) ++d; return d; };
    return depth(a) > depth(b);
  });
  return out;
}

std::string path_of(const CLI::App* a) {
  std::string p;
  for (const CLI::App* x = a; x && x->get_parent(); x = x->get_parent()) p = x->get_name() + (p.empty() ? "" : " " + p);
  return p;
}
}  // namespace

ExitCode run_generate(const CLI::App& app, const GenerateOptions& o, std::ostream& out) {
  const auto cmds = commands(app);
  if (o.what == "man") {
    fmt::print(out, ".TH GPUPLAN 1 \"2026-11\" \"gpuplan 0.1.0\" \"User Commands\"\n.SH NAME\ngpuplan \\- {}\n",
               roff(app.get_description()));
    fmt::print(out, ".SH SYNOPSIS\n.B gpuplan\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n.SH COMMANDS\n");
    for (const auto* c : cmds) {
      fmt::print(out, ".SS {}\n{}\n", roff(path_of(c)), roff(c->get_description()));
      for (const auto* opt : c->get_options()) {
        if (opt->get_name() == "--help" || opt->get_name().empty()) continue;
        fmt::print(out, ".TP\n.B {}\n{}\n", roff(opt->get_name(false, true)), roff(opt->get_description()));
      }
      if (!c->get_footer().empty()) fmt::print(out, ".PP\n.nf\n{}\n.fi\n", roff(c->get_footer()));
    }
    fmt::print(out,
               ".SH EXIT STATUS\n.TP\n0\nsuccess, every requested limit holds\n.TP\n1\na requested limit fails or the "
               "workload does not fit\n.TP\n2\nusage error: bad flag or value, unknown name, conflicting flags\n.TP\n3\n"
               "data error: a model config or catalog file missing or malformed\n.SH ENVIRONMENT\nNone is read.\n");
    return ExitCode::ok;
  }
  if (o.what == "bash") {
    fmt::print(out, "# bash completion for gpuplan (generated)\n_gpuplan() {{\n  local cur words\n  cur=\"${{COMP_WORDS[COMP_CWORD]}}\"\n"
                    "  case \"${{COMP_WORDS[1]}} ${{COMP_WORDS[2]}}\" in\n");
    std::string top;
    for (const auto* c : cmds) {
      if (c->get_parent() == &app) top += c->get_name() + " ";
      std::string opts;
      for (const auto* opt : c->get_options())
        for (const auto& n : opt->get_lnames()) opts += "--" + n + " ";
      std::string subs;
      for (const auto* s : c->get_subcommands({})) subs += s->get_name() + " ";
      const std::string key = path_of(c) + (c->get_parent() == &app ? " *" : "");
      fmt::print(out, "    \"{}\") words=\"{}{}\" ;;\n", key, subs, opts);
    }
    fmt::print(out, "    *) words=\"{}--help --version --quiet\" ;;\n  esac\n  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}}\n"
                    "complete -F _gpuplan gpuplan\n", top);
    return ExitCode::ok;
  }
  if (o.what == "zsh") {
    fmt::print(out, "#compdef gpuplan\n# zsh completion for gpuplan (generated)\n_gpuplan() {{\n  local -a commands\n  commands=(\n");
    for (const auto* c : cmds)
      if (c->get_parent() == &app) fmt::print(out, "    '{}:{}'\n", c->get_name(), c->get_description());
    fmt::print(out, "  )\n  if (( CURRENT == 2 )); then _describe command commands; return; fi\n  case $words[2] in\n");
    for (const auto* c : cmds) {
      if (c->get_parent() != &app) continue;
      std::string opts;
      for (const auto* opt : c->get_options())
        for (const auto& n : opt->get_lnames()) opts += " --" + n;
      for (const auto* s : c->get_subcommands({})) opts += " " + s->get_name();
      fmt::print(out, "    {}) compadd --{} ;;\n", c->get_name(), opts);
    }
    fmt::print(out, "  esac\n}}\n_gpuplan \"$@\"\n");
    return ExitCode::ok;
  }
  throw InputError("generate: expected man, bash or zsh");
}

}  // namespace gpuplan::cli
