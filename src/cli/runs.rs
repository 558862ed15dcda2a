//! `report` and `compare`: saved runs read from files (or standard
//! input), then drawn or compared.

use super::{textfile, warn, Out};
use crate::report::Table;
use crate::report::{self, Input};
use crate::report::{Style, View};
use crate::saved::Saved;
use std::io::Read;
use std::path::Path;

/// The largest saved run read (a full-preset probe of several targets is
/// a few MB); a bigger file is refused rather than read into memory.
const MAX_RUN_BYTES: u64 = 256 << 20;

/// Reads one saved run; `-` is standard input. The error is one line
/// naming the file.
fn read_run(path: &Path) -> Result<Input, String> {
    let name = path.display().to_string();
    let mut bytes = Vec::new();
    let read = if name == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_RUN_BYTES + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(MAX_RUN_BYTES + 1).read_to_end(&mut bytes))
    };
    let name = if name == "-" { "stdin".into() } else { name };
    read.map_err(|e| format!("cannot read {name}: {e}"))?;
    if bytes.len() as u64 > MAX_RUN_BYTES {
        return Err(format!(
            "{name}: larger than {} MiB; not a saved run",
            MAX_RUN_BYTES >> 20
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| not_text(&name, &e))?;
    let doc = Saved::parse(&text, &name).map_err(|e| e.to_string())?;
    Ok(Input { name, doc })
}

/// The units the saved probe runs in `files` bracketed (`--probe`), each
/// with the device it was measured on; a target of a run that bracketed
/// none is said on stderr and left out. Err: the one line refusing a file
/// that is no probe run.
pub fn measured(files: &[std::path::PathBuf]) -> Result<Vec<crate::inspect::Measured>, String> {
    let mut out = Vec::new();
    for f in files {
        let input = read_run(f).map_err(|e| format!("--probe: {e}"))?;
        let Saved::Probe(doc) = input.doc else {
            return Err(format!(
                "--probe {}: not a probe run (a file of probe --json=FILE)",
                input.name
            ));
        };
        let (units, unused) = doc.bracketed_units();
        for line in unused {
            warn(&format!("--probe {}: {line}", input.name));
        }
        out.extend(units.into_iter().map(|m| crate::inspect::Measured {
            file: input.name.clone(),
            ..m
        }));
    }
    Ok(out)
}

/// A file that is not even text (an image, a gzip): what it is not, and
/// what was expected instead.
fn not_text(name: &str, e: &std::string::FromUtf8Error) -> String {
    format!(
        "{name}: not JSON: byte {} is not UTF-8 text; {}",
        e.utf8_error().valid_up_to(),
        crate::saved::EXPECTED
    )
}

/// Reads every run or says why one could not be read.
fn read_all(paths: &[&Path]) -> Result<Vec<Input>, String> {
    paths.iter().map(|p| read_run(p)).collect()
}

/// `report`: the page to its outputs (standard output, or the
/// `--output` file instead); with `figures`, each figure also as its own
/// SVG file there.
pub fn report(runs: &[std::path::PathBuf], figures: Option<&Path>, out: &Out) -> (String, u8) {
    let paths: Vec<&Path> = runs.iter().map(|p| p.as_path()).collect();
    let inputs = match read_all(&paths) {
        Ok(i) => i,
        Err(e) => {
            warn(&e);
            return (String::new(), 2);
        }
    };
    let page = report::render_html(&inputs);
    let mut code = 0;
    if let Some(dir) = figures {
        code = match write_figures(dir, &page) {
            Some(c) => c,
            None => return (String::new(), 2),
        };
    }
    out.outputs.write_with(|_| Some(page.clone()), code)
}

/// `--figures DIR`: each figure of `page` as DIR/<id>.svg. These files
/// are not in the outputs list: how many there are and their names come
/// from the figures the page holds, known only once it is drawn, and
/// each is a piece of the page rather than a format of the run. So the
/// directory is made here (its parent must exist) and each file written
/// atomically as it comes; None when the directory cannot be made
/// (nothing written then, not even the page), else 0, or 2 when a
/// figure could not be written (one line on stderr each).
fn write_figures(dir: &Path, page: &str) -> Option<u8> {
    if let Err(e) = std::fs::create_dir(dir).or_else(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists if dir.is_dir() => Ok(()),
        _ => Err(e),
    }) {
        warn(&format!("cannot make {}: {e}", dir.display()));
        return None;
    }
    let mut code = 0;
    for (id, svg) in report::html_figures(page) {
        let path = dir.join(format!("{id}.svg"));
        if let Err(e) = textfile::write_atomic(&path, &svg) {
            warn(&format!("cannot write {}: {e}", path.display()));
            code = 2;
        }
    }
    Some(code)
}

/// `compare`: the comparison in every output asked for, its table of
/// the `columns` `-o` named (the cells of probe runs, the findings of
/// check or watch runs: known once they are read); exit status 1 when
/// something differs, with 4 when B is worse than A (its `outcome`). Two
/// check runs whose disks under one name may not be the same disk are
/// compared, with a warning (in the human report, else one line on
/// stderr).
pub fn compare(a: &Path, b: &Path, columns: Option<&[String]>, out: &Out) -> (String, u8) {
    let inputs = match read_all(&[a, b]) {
        Ok(i) => i,
        Err(e) => {
            warn(&e);
            return (String::new(), 2);
        }
    };
    let c = match crate::saved::compare(&inputs[0].doc, &inputs[1].doc) {
        Ok(c) => c,
        Err(e) => {
            warn(&e.to_string());
            return (String::new(), 2);
        }
    };
    let style = match Table::compared(&c).named(columns) {
        Ok(columns) => Style {
            columns,
            ..out.style.clone()
        },
        Err(e) => {
            warn(&format!("error: {e}"));
            return (String::new(), 2);
        }
    };
    let out = Out {
        style: &style,
        ..*out
    };
    // Said once: the human report says it; with another format on
    // stdout, or the table alone, stderr does.
    let human = out.outputs.stdout() == crate::report::Format::Human && style.view != View::Table;
    if let (crate::compare::Comparison::Check(k), false) = (&c, human) {
        for t in &k.targets {
            if let Some(why) = &t.different_disk {
                warn(&format!(
                    "{}: A and B may not be the same disk ({why}): compared all the same",
                    t.target
                ));
            }
        }
    }
    out.write(crate::report::Run::Compare(&c), c.outcome().exit_status)
}
