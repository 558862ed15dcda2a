//! `diskalign completions SHELL` and `diskalign man`: what tools/package-deb
//! installs, generated from the command line's own definitions.
//! tests/package/run checks the installed package.

mod common;
use common::*;
use std::process::Command;

const COMMANDS: [&str; 5] = ["topology", "check", "probe", "completions", "man"];

#[test]
fn completions_know_every_command_and_option() {
    for shell in ["bash", "zsh", "fish"] {
        let (out, err, code) = run_full(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert_eq!(err, "", "{shell}");
        for word in COMMANDS
            .iter()
            .chain(&["sysfs-root", "emit-fio", "topology"])
        {
            assert!(
                out.contains(word),
                "{shell} completion lacks {word}:\n{out}"
            );
        }
    }
}

#[test]
fn bash_completes_from_the_script() {
    require_tool("bash");
    let (script, _, code) = run_full(&["completions", "bash"]);
    assert_eq!(code, 0);
    // What bash offers after `diskalign ` and `diskalign probe --emit`.
    let complete = |line: &str| {
        let words: Vec<&str> = line.split(' ').collect();
        let test = format!(
            "{script}\nCOMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n\
             $(complete -p diskalign | sed 's/.*-F \\([^ ]*\\) .*/\\1/') diskalign '{last}' '{prev}'\n\
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            words = words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
            cword = words.len() - 1,
            last = words[words.len() - 1],
            prev = words[words.len() - 2],
        );
        let (out, err, code) = output_of(Command::new("bash").arg("-c").arg(test));
        assert_eq!(code, 0, "{line}: {err}");
        out
    };
    let commands = complete("diskalign ");
    for c in COMMANDS {
        assert!(
            commands.lines().any(|l| l == c),
            "{c} not offered:\n{commands}"
        );
    }
    assert_eq!(complete("diskalign probe --emit").trim(), "--emit-fio");
}

#[test]
fn the_man_page_is_roff_and_documents_every_command() {
    let (page, err, code) = run_full(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    assert!(
        page.lines().any(|l| l.starts_with(".TH diskalign 1 ")),
        "{page}"
    );
    for c in COMMANDS {
        assert!(
            page.contains(&format!(".SS \"diskalign {c}\"")),
            "{c}:\n{page}"
        );
    }
    assert!(page.contains(".SH \"EXIT STATUS\""), "{page}");
    assert!(page.contains(env!("CARGO_PKG_VERSION")), "{page}");
}

#[test]
fn man_formats_the_page_without_warnings() {
    require_tool("man");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("diskalign.1");
    std::fs::write(&path, run(&["man"]).0).unwrap();
    // --warnings: groff's warnings (an unknown macro, a bad escape) on stderr.
    let (text, err, code) = output_of(
        Command::new("man")
            .args(["--warnings", "-l"])
            .arg(&path)
            .env("MANWIDTH", "80"),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "", "groff warns about the page");
    for heading in ["NAME", "SYNOPSIS", "OPTIONS", "COMMANDS", "EXIT STATUS"] {
        assert!(text.lines().any(|l| l == heading), "{heading}:\n{text}");
    }
}

#[test]
fn an_unknown_shell_is_a_one_line_refusal() {
    for args in [&["completions", "tcsh"][..], &["completions"][..]] {
        let (out, err, code) = run_full(args);
        let ctx = format!("{args:?}: exit {code}\nstdout: {out}\nstderr: {err}");
        assert_eq!(code, 2, "{ctx}");
        assert_eq!(err.trim_end().lines().count(), 1, "{ctx}");
        assert!(err.starts_with("diskalign: error: "), "{ctx}");
        assert_eq!(out, "", "{ctx}");
    }
    let (_, err, _) = run_full(&["completions", "tcsh"]);
    assert!(
        err.contains("'tcsh'") && err.contains("bash, zsh, fish"),
        "{err}"
    );
}
