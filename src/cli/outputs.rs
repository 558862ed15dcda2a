//! The outputs of a run: a list of (format, destination) pairs, as
//! hyperfine's export manager keeps them. Standard output gets one format
//! (`--format`); `--json=FILE`, `--csv FILE`, `--html FILE`,
//! `--prometheus FILE` and plan's `--script FILE` each add a file, and
//! `report --output FILE` sends standard output's page to a file instead.
//! Every pair is checked before the run (the command has that format, no
//! file is named twice or names an input, each file can be written) and
//! written after it by the one loop in [`Outputs::write_with`]; a file is
//! replaced atomically ([`super::textfile`]).

use super::{textfile, warn};
use crate::report::{self, Format, Kind, Run, Stamp, Style};
use std::path::{Path, PathBuf};

/// Where one output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum To {
    Stdout,
    /// A file, named by the flag that asked for it (`--html`).
    File {
        path: PathBuf,
        flag: &'static str,
    },
}

/// One (format, destination) pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub format: Format,
    pub to: To,
}

/// Every output of a run, standard output's first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outputs {
    list: Vec<Output>,
}

impl Outputs {
    /// Standard output in `format`, and no file yet.
    pub fn new(stdout: Format) -> Outputs {
        Outputs {
            list: vec![Output {
                format: stdout,
                to: To::Stdout,
            }],
        }
    }

    /// The same files, standard output in `format`.
    pub fn with_stdout(mut self, format: Format) -> Outputs {
        self.list[0].format = format;
        self
    }

    /// The format standard output gets (or the file it was sent to
    /// instead, [`Outputs::stdout_to_file`]).
    pub fn stdout(&self) -> Format {
        self.list[0].format
    }

    /// Write what standard output would get to `path` instead (the flag
    /// `flag` asked for it: `report --output FILE`); standard output then
    /// gets nothing.
    pub fn stdout_to_file(&mut self, path: Option<PathBuf>, flag: &'static str) {
        if let Some(path) = path {
            self.list[0].to = To::File { path, flag };
        }
    }

    /// Also write `format` to `path` (the flag `flag` asked for it).
    pub fn add_file(&mut self, format: Format, path: Option<PathBuf>, flag: &'static str) {
        if let Some(path) = path {
            self.list.push(Output {
                format,
                to: To::File { path, flag },
            });
        }
    }

    /// A file in `format` was asked for.
    pub fn has_file(&self, format: Format) -> bool {
        self.files().any(|(f, _, _)| f == format)
    }

    /// Leave out the files in `format` (a plan that writes no script);
    /// standard output's own, wherever it was sent, stays.
    pub fn drop_files(&mut self, format: Format) {
        let mut first = true;
        self.list
            .retain(|o| std::mem::take(&mut first) || o.format != format);
    }

    /// Human text on standard output and no file.
    pub fn is_plain(&self) -> bool {
        self.stdout() == Format::Human && self.files().next().is_none()
    }

    fn files(&self) -> impl Iterator<Item = (Format, &Path, &'static str)> {
        self.list.iter().filter_map(|o| match &o.to {
            To::File { path, flag } => Some((o.format, path.as_path(), *flag)),
            To::Stdout => None,
        })
    }

    /// The one line that refuses these outputs for `kind`, without
    /// touching the filesystem: a format the command does not have, or a
    /// file named twice.
    pub fn refuse(&self, kind: Kind) -> Result<(), String> {
        let has = kind.formats();
        if !has.contains(&self.stdout()) {
            return Err(format!(
                "{} has no {} output (--format {})",
                kind.name(),
                self.stdout().title(),
                self.stdout()
            ));
        }
        let files: Vec<_> = self.files().collect();
        for (i, (format, path, flag)) in files.iter().enumerate() {
            if !has.contains(format) {
                return Err(format!(
                    "{} has no {} output ({flag} {})",
                    kind.name(),
                    format.title(),
                    path.display()
                ));
            }
            if let Some((_, _, other)) = files[..i].iter().find(|(_, p, _)| same_file(p, path)) {
                return Err(format!(
                    "{} is given twice ({other} and {flag}): each output needs its own file",
                    path.display()
                ));
            }
        }
        Ok(())
    }

    /// The one line that refuses a file that cannot be written, before
    /// the run: its directory missing or read-only, or the name taken by
    /// something other than a regular file (a directory, a device node).
    /// A file that names one of the run's `inputs` (an image checked, a
    /// saved run compared) is refused too: writing it would replace what
    /// is read, `check disk.img --csv disk.img` the image itself; and so
    /// is one that holds what no output of ours could have written (a
    /// block device, binary data, a disk image's signature:
    /// [`textfile::not_ours`]), `check --csv b1.img b2.img` meant as two
    /// targets.
    pub fn check_files(&self, inputs: &[&Path]) -> Result<(), String> {
        for (_, path, flag) in self.files() {
            refuse_input(path, flag, inputs)?;
            if let Some(what) = textfile::not_ours(path) {
                let p = path.display();
                let instead = if what.starts_with("is a block device") {
                    "name a file"
                } else {
                    "remove it first or name another file"
                };
                return Err(format!(
                    "{flag} {p}: {p} {what}: refusing to replace it; {instead}"
                ));
            }
            textfile::check_writable(path)
                .map_err(|e| format!("{flag} {}: cannot write there: {e}", path.display()))?;
        }
        Ok(())
    }

    /// Writes `run` to every file and returns standard output's text,
    /// with `code` and 2 added when a file could not be written (one line
    /// on stderr each). `style` and `stamp` shape the exporters.
    pub fn write(&self, run: Run, style: &Style, stamp: &Stamp, code: u8) -> (String, u8) {
        let export = |format| run.export(&*report::exporter(format, style.clone(), stamp));
        self.write_with(export, code)
    }

    /// Writes the text `render` gives for each output's format to every
    /// file and returns standard output's (empty when it was sent to a
    /// file), with `code` and 2 added when a file could not be written.
    /// `report`'s page, drawn from saved runs rather than from one run,
    /// goes out here.
    pub fn write_with(&self, render: impl Fn(Format) -> Option<String>, code: u8) -> (String, u8) {
        let mut code = code;
        let mut text = String::new();
        for o in &self.list {
            let Some(rendered) = render(o.format) else {
                // `refuse` let no such pair through; nothing to write.
                continue;
            };
            match &o.to {
                To::Stdout => text = rendered,
                To::File { path, .. } => {
                    if let Err(e) = textfile::write_atomic(path, &rendered) {
                        warn(&format!("cannot write {}: {e}", path.display()));
                        code |= 2;
                    }
                }
            }
        }
        (text, code)
    }
}

/// The one line refusing `path` (given by `flag`) when it names one of
/// `inputs`.
fn refuse_input(path: &Path, flag: &str, inputs: &[&Path]) -> Result<(), String> {
    match inputs.iter().find(|i| same_file(i, path)) {
        Some(i) => Err(format!(
            "{flag} {}: that is {}, an input of this run; writing there would replace it",
            path.display(),
            i.display()
        )),
        None => Ok(()),
    }
}

/// Two names of one file: the same path once made absolute, through
/// the directory's symlinks, or the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        if (x.dev(), x.ino()) == (y.dev(), y.ino()) {
            return true;
        }
    }
    absolute(a) == absolute(b)
}

/// `path` absolute, its directory resolved where it exists.
fn absolute(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    match path.file_name() {
        Some(name) => dir.join(name),
        None => dir,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs(stdout: Format, files: &[(Format, &Path)]) -> Outputs {
        let mut o = Outputs::new(stdout);
        for (f, p) in files {
            o.add_file(*f, Some(p.to_path_buf()), "--x");
        }
        o
    }

    #[test]
    fn a_format_the_command_lacks_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("p.prom");
        let o = outputs(Format::Human, &[(Format::Prometheus, &f)]);
        assert!(o.refuse(Kind::Check).is_ok());
        let e = o.refuse(Kind::Probe).unwrap_err();
        assert!(e.starts_with("probe has no Prometheus output"), "{e}");
        let e = outputs(Format::Csv, &[]).refuse(Kind::Plan).unwrap_err();
        assert_eq!(e, "plan has no CSV output (--format csv)");
    }

    #[test]
    fn one_file_named_twice_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("out");
        let b = d.path().join(".").join("out");
        let o = outputs(Format::Human, &[(Format::Json, &a), (Format::Html, &b)]);
        let e = o.refuse(Kind::Check).unwrap_err();
        assert!(e.contains("is given twice"), "{e}");
        let c = d.path().join("other");
        let o = outputs(Format::Human, &[(Format::Json, &a), (Format::Html, &c)]);
        assert!(o.refuse(Kind::Check).is_ok());
    }

    #[test]
    fn a_file_that_cannot_be_written_is_refused_before_the_run() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("no/such/dir/x.json");
        let o = outputs(Format::Human, &[(Format::Json, &missing)]);
        assert!(o.check_files(&[]).is_err());
        // A directory is not a file to replace.
        let o = outputs(Format::Human, &[(Format::Json, d.path())]);
        assert!(o.check_files(&[]).is_err());
        let ok = d.path().join("x.json");
        let o = outputs(Format::Human, &[(Format::Json, &ok)]);
        o.check_files(&[]).unwrap();
        // The check leaves nothing behind.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    /// `report --output FILE`: the page goes to the file instead of
    /// standard output, and the file is checked like any other.
    #[test]
    fn standard_output_sent_to_a_file_is_a_file() {
        let d = tempfile::tempdir().unwrap();
        let page = d.path().join("page.html");
        let mut o = Outputs::new(Format::Html);
        o.stdout_to_file(Some(page.clone()), "--output");
        assert_eq!(o.stdout(), Format::Html);
        let run = d.path().join("run.json");
        o.check_files(&[&run]).unwrap();
        let e = o.check_files(&[&page]).unwrap_err();
        assert!(e.starts_with("--output "), "{e}");
        assert!(e.contains("an input of this run"), "{e}");
        let (text, code) = o.write_with(|f| Some(format!("<{f}>")), 0);
        assert_eq!((text.as_str(), code), ("", 0));
        assert_eq!(std::fs::read_to_string(&page).unwrap(), "<html>");
        // Without the flag, the page is standard output's.
        let mut o = Outputs::new(Format::Html);
        o.stdout_to_file(None, "--output");
        assert_eq!(o.write_with(|_| Some("p".into()), 0), ("p".into(), 0));
    }

    #[test]
    fn every_output_is_written_and_stdout_returned() {
        let d = tempfile::tempdir().unwrap();
        let (j, h) = (d.path().join("a.json"), d.path().join("a.html"));
        let o = outputs(Format::Csv, &[(Format::Json, &j), (Format::Html, &h)]);
        let survey = crate::topology::Survey {
            disks: vec![],
            errors: vec![],
        };
        let stamp = Stamp {
            host: "h".into(),
            started: std::time::UNIX_EPOCH,
        };
        let (text, code) = o.write(Run::Topology(&survey), &Style::plain(), &stamp, 0);
        assert_eq!(code, 0);
        assert!(text.starts_with("name,"), "{text}");
        assert!(std::fs::read_to_string(&j)
            .unwrap()
            .contains("diskalign.topology"));
        assert!(std::fs::read_to_string(&h)
            .unwrap()
            .starts_with("<!DOCTYPE html>"));
    }
}
