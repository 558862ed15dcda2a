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

/// The statuses each command can return (cli: `check::summarize_run`, `plan::run`,
/// `run_probe`, `watch::run`, `runs::report`, `runs::compare`, and 2 from
/// an output file that could not be written), as its help must list them.
const STATUSES: [(&str, &[u8]); 9] = [
    ("topology", &[0, 1, 2, 3]),
    ("check", &[0, 1, 2, 3]),
    ("probe", &[0, 1, 2, 3, 4, 5, 6, 7]),
    ("report", &[0, 2]),
    ("compare", &[0, 1, 2, 3, 5, 7]),
    ("plan", &[0, 1, 2, 3]),
    ("watch", &[0, 1, 2, 3]),
    ("completions", &[0, 2]),
    ("man", &[0, 2]),
];

/// The statuses the "Exit status" paragraph of `text` names: each as
/// `: N ` or `; N ` (`3 = 1 + 2` included).
fn statuses_named(text: &str) -> Vec<u8> {
    let from = text
        .find("Exit status")
        .unwrap_or_else(|| panic!("no exit status in:\n{text}"));
    let para = text[from..].split("\n\n").next().unwrap();
    let mut named: Vec<u8> = (0..=9u8)
        .filter(|n| para.contains(&format!(": {n} ")) || para.contains(&format!("; {n} ")))
        .collect();
    named.dedup();
    named
}

/// Every command's -h and --help list exactly the statuses it can return,
/// and every command is in the list.
#[test]
fn every_command_help_lists_its_exit_statuses() {
    let (top, _, code) = run_full(&["--help"]);
    assert_eq!(code, 0);
    let commands: Vec<&str> = top
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    let listed: Vec<&str> = STATUSES.iter().map(|(c, _)| *c).collect();
    assert_eq!(commands, listed, "a command without its statuses here");
    for (cmd, want) in STATUSES {
        for flag in ["-h", "--help"] {
            let (text, err, code) = run_full(&[cmd, flag]);
            assert_eq!(code, 0, "{cmd} {flag}: {err}");
            assert_eq!(statuses_named(&text), want, "{cmd} {flag}:\n{text}");
        }
    }
    // The man page holds the same paragraphs.
    let (man, _, _) = run_full(&["man"]);
    assert!(man.contains("5 = 1 + 4: a penalty decided at one offset"));
    assert!(man.contains("3 = 1 + 2: a plan with changes"));
}
