//! What a package installs beside the binary, generated from the clap
//! definitions in `args` so that it cannot drift from them: the man page
//! (`diskalign man`) and the shell completions (`diskalign completions
//! SHELL`). tools/package-deb runs both on the binary it packages.

use super::args::{Asset, Cli, Shell};
use clap::CommandFactory;
use clap_mangen::roff::Roff;
use clap_mangen::Man;

impl Shell {
    fn generator(self) -> clap_complete::Shell {
        match self {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        }
    }
}

/// The asset's text, for stdout.
pub fn render(asset: Asset) -> String {
    match asset {
        Asset::Completions { shell } => completions(shell),
        Asset::Man => man_page(),
    }
}

fn completions(shell: Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell.generator(), &mut Cli::command(), NAME, &mut out);
    String::from_utf8(out).expect("clap_complete writes UTF-8")
}

const NAME: &str = "diskalign";

/// One page, diskalign(1), for everything: the global options, then each
/// command in a subsection of COMMANDS with its synopsis, description,
/// options and notes, then EXIT STATUS from the top-level help. clap_mangen
/// renders every piece; its per-command pages (diskalign-check(1), ...)
/// would leave `man diskalign` without the options of any command.
fn man_page() -> String {
    // Not built: the subcommands then carry neither the global options
    // (documented once, at the top) nor their own -h.
    let cli = Cli::command()
        .disable_help_subcommand(true)
        .subcommand_value_name("COMMAND");
    let top = Man::new(cli.clone());
    let mut page = render_with(|w| top.render_title(w));
    page += &strip_preamble(&render_with(|w| top.render_name_section(w)));
    page += &strip_preamble(&render_with(|w| top.render_synopsis_section(w)));
    page += &strip_preamble(&render_with(|w| top.render_description_section(w)));
    page += &strip_preamble(&render_with(|w| top.render_options_section(w)));
    page += &Roff::new().control("SH", ["COMMANDS"]).to_roff();
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{NAME} {}", sub.get_name());
        let man = Man::new(sub.clone().bin_name(&name).disable_help_flag(true));
        page += &Roff::new().control("SS", [name.as_str()]).to_roff();
        page += &section_body(&render_with(|w| man.render_synopsis_section(w)));
        page += &paragraph(&render_with(|w| man.render_description_section(w)));
        if sub.get_arguments().any(|a| !a.is_hide_set()) {
            page += &section_body(&render_with(|w| man.render_options_section(w)));
        }
        if sub.get_after_help().is_some() || sub.get_after_long_help().is_some() {
            page += &paragraph(&render_with(|w| man.render_extra_section(w)));
        }
    }
    page += &Roff::new().control("SH", ["EXIT STATUS"]).to_roff();
    page += &section_body(&render_with(|w| top.render_extra_section(w)));
    page += &strip_preamble(&render_with(|w| top.render_version_section(w)));
    page
}

type Writer<'a> = &'a mut dyn std::io::Write;

fn render_with(f: impl FnOnce(Writer) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    f(&mut out).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("clap_mangen writes UTF-8")
}

/// Every rendered piece starts with roff's string definitions, which the
/// page needs once (from its title).
fn strip_preamble(piece: &str) -> String {
    let preamble = Roff::new().render();
    piece
        .strip_prefix(&preamble)
        .expect("clap_mangen starts every piece with roff's preamble")
        .to_string()
}

/// A section rendered for a command, without its `.SH` heading, to go under
/// a heading of this page.
fn section_body(piece: &str) -> String {
    let piece = strip_preamble(piece);
    let (heading, body) = piece.split_once('\n').unwrap_or((&piece, ""));
    assert!(heading.starts_with(".SH "), "not a section: {heading}");
    body.to_string()
}

/// A section's body as a paragraph of its own.
fn paragraph(piece: &str) -> String {
    Roff::new().control("PP", []).to_roff() + &section_body(piece)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_one_title_and_one_preamble() {
        let page = man_page();
        assert!(page.starts_with(&Roff::new().render()), "{page}");
        assert_eq!(page.matches(".ds Aq").count(), 2, "{page}"); // .ie and .el
        assert_eq!(page.lines().filter(|l| l.starts_with(".TH ")).count(), 1);
    }

    #[test]
    fn every_command_has_a_subsection_with_its_options() {
        let page = man_page();
        for (command, option) in [
            ("topology", "format"),
            ("check", "topology"),
            ("probe", "destructive"),
            ("completions", "SHELL"),
            ("man", ""),
        ] {
            let heading = format!(".SS \"diskalign {command}\"\n");
            let at = page
                .find(&heading)
                .unwrap_or_else(|| panic!("{heading}{page}"));
            let rest = &page[at + heading.len()..];
            let section = &rest[..rest.find("\n.S").unwrap_or(rest.len())];
            assert!(section.contains(option), "{command}: {section}");
        }
        // The global options once, at the top; no per-command -h.
        let commands = &page[page.find(".SH COMMANDS").unwrap()..];
        for global in ["\\fB\\-\\-sysfs\\-root\\fR", "\\fB\\-\\-help\\fR"] {
            assert!(page.contains(global), "{global}: {page}");
            assert!(!commands.contains(global), "{global}: {commands}");
        }
    }

    #[test]
    fn exit_status_comes_from_the_help() {
        let page = man_page();
        let at = page.find(".SH \"EXIT STATUS\"\n").expect("EXIT STATUS");
        assert!(page[at..].contains("a bitmask"), "{page}");
        // The probe's own statuses stay with the probe.
        let probe = page.find(".SS \"diskalign probe\"").unwrap();
        assert!(page[probe..at].contains("0 no penalty"), "{page}");
    }
}
