//! The HTML report: one self-contained file with the figures of saved
//! runs (`diskalign report RUN.json... -o report.html`, or `--html FILE`
//! and `--format html` on check, topology, probe and compare).
//!
//! Every page is drawn from the saved documents ([`crate::saved`]): the
//! commands serialise their run to its JSON document and read it back, so
//! a report from `--html` and one from `report` of the saved JSON are the
//! same page.
//!
//! The figures are SVG written by [`svg`], our own: a heatmap, line plots
//! with a band, bars and a few marks need rectangles, polylines, polygons
//! and text, with a `<title>` per mark for the hover details and `data-*`
//! attributes the browser tests read. A plotting crate (plotters) would
//! bring its own text layout and a larger dependency tree and gives
//! neither per-mark titles nor attributes; [`scale`] holds the numbers
//! (scales, colours) and is tested apart from the drawing, and `kit`
//! what every figure draws alike: the text measure, ticks, axes and
//! legends.

mod check;
mod compare;
mod findings;
mod kit;
mod look;
mod page;
mod plan;
mod probe;
mod scale;
mod svg;
mod topology;
mod watch;

/// A table of the page and a finding's subject as the page names it, for
/// the column model's HTML tables.
pub use page::{subject, table, Td};

use crate::saved::Saved;

/// One saved run and the name it is shown by (its file name).
pub struct Input {
    pub name: String,
    pub doc: Saved,
}

/// The page's title: what is in it. One run is named by its targets, its
/// host and its date, and the file it was read from: `diskalign check of
/// /dev/sda on db-07, 2026-11-22 21:04 UTC (run.json)`.
fn title(inputs: &[Input]) -> String {
    match inputs {
        [one] => match describe(&one.doc) {
            Some(what) if what == one.name => format!("diskalign {} of {what}", one.doc.kind()),
            Some(what) => format!("diskalign {} of {what} ({})", one.doc.kind(), one.name),
            None => format!("diskalign {} report: {}", one.doc.kind(), one.name),
        },
        _ => format!("diskalign report: {} runs", inputs.len()),
    }
}

/// What a run was about, where and when, as far as its document says:
/// `/dev/sda, /dev/sdb on db-07, 2026-11-22 21:04 UTC`; None for a
/// comparison, which names its two runs itself.
fn describe(doc: &Saved) -> Option<String> {
    let (targets, host, started): (Vec<&str>, &str, &str) = match doc {
        Saved::Check(d) => (
            d.targets
                .iter()
                .map(|t| t.path.as_str())
                .chain(d.errors.iter().map(|e| e.path.as_str()))
                .collect(),
            &d.header.host,
            &d.header.started_at,
        ),
        Saved::Topology(d) => (
            d.body
                .disks
                .iter()
                .map(|t| t.device.to_str().unwrap_or(&t.name))
                .chain(d.body.errors.iter().map(|e| e.path.as_str()))
                .collect(),
            &d.header.host,
            &d.header.started_at,
        ),
        Saved::Probe(d) => {
            let mut t: Vec<&str> = d
                .targets
                .iter()
                .map(|t| t.target.path.to_str().unwrap_or_default())
                .collect();
            if t.is_empty() {
                t.push(d.target.path.to_str().unwrap_or_default());
            }
            let when = crate::units::parse_rfc3339(&d.header.started_at)
                .or((d.started_unix > 0).then_some(d.started_unix));
            return with_where(&t, &d.header.host, when);
        }
        Saved::Compare(_) => return None,
        Saved::Watch { doc: d, .. } => (
            d.body.stack.iter().map(|w| w.device.as_str()).collect(),
            &d.header.host,
            &d.header.started_at,
        ),
    };
    with_where(&targets, host, crate::units::parse_rfc3339(started))
}

/// `a, b, c and 2 more on HOST, DATE`, leaving out what is unknown; None
/// when nothing is known.
fn with_where(targets: &[&str], host: &str, started: Option<u64>) -> Option<String> {
    const SHOWN: usize = 3;
    if targets.is_empty() && host.is_empty() && started.is_none() {
        return None;
    }
    let mut s = match targets.len() {
        0 => "no targets".to_string(),
        n if n <= SHOWN + 1 => targets.join(", "),
        n => format!("{} and {} more", targets[..SHOWN].join(", "), n - SHOWN),
    };
    if !host.is_empty() {
        s.push_str(" on ");
        s.push_str(host);
    }
    if let Some(t) = started {
        s.push_str(", ");
        s.push_str(&crate::units::utc(t));
    }
    Some(s)
}

/// The page of several saved runs, one section each, in the order given.
/// `n` numbers each run's ids so two runs of one kind never share one.
pub fn render_html(inputs: &[Input]) -> String {
    let sections: Vec<String> = inputs
        .iter()
        .enumerate()
        .map(|(n, i)| {
            let id = format!("run{}", n + 1);
            match &i.doc {
                Saved::Check(d) => check::section(&id, &i.name, d),
                Saved::Topology(d) => topology::section(&id, &i.name, d),
                Saved::Probe(d) => probe::section(&id, &i.name, d),
                Saved::Compare(c) => compare::section(&id, &i.name, c),
                Saved::Watch { doc, .. } => watch::section(&id, &i.name, doc),
            }
        })
        .collect();
    let names: Vec<String> = inputs.iter().map(|i| i.name.clone()).collect();
    page::document(&title(inputs), &names, &sections)
}

/// Every figure of a page, as (id, standalone SVG): `report --figures`
/// writes each to its own file. The figures draw with presentation
/// attributes only, so each stands alone.
pub fn html_figures(page: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<svg ") {
        let Some(len) = rest[start..].find("</svg>") else {
            break;
        };
        let svg = &rest[start..start + len + "</svg>".len()];
        let id = svg
            .split_once(" id=\"")
            .and_then(|(_, tail)| tail.split_once('"'))
            .map_or_else(
                || format!("figure{}", out.len() + 1),
                |(id, _)| id.to_string(),
            );
        out.push((
            id,
            format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{svg}\n"),
        ));
        rest = &rest[start + svg.len()..];
    }
    out
}

/// The HTML exporter: each command's run as its JSON document, read back
/// and drawn, so `--format html` and `report` of the saved JSON agree.
pub struct Html {
    pub stamp: super::Stamp,
}

/// The page of a run's own document; the run is named by what it was
/// about, where and when.
fn from_json(text: &str, name: &str) -> String {
    match Saved::parse(text, name) {
        Ok(doc) => render_html(&[Input {
            name: describe(&doc).unwrap_or_else(|| name.to_string()),
            doc,
        }]),
        // Our own document always reads back; this would be a bug.
        Err(e) => page::document("diskalign report", &[], &[page::para(&e.to_string())]),
    }
}

impl super::Exporter for Html {
    fn check(&self, run: &crate::check::CheckRun) -> Option<String> {
        Some(from_json(
            &super::json::check_json(run, &self.stamp),
            "this check run",
        ))
    }

    fn topology(&self, survey: &crate::topology::Survey) -> Option<String> {
        Some(from_json(
            &super::json::topology_json(survey, &self.stamp),
            "this topology run",
        ))
    }

    fn probe(&self, report: &crate::probe::ProbeRun) -> Option<String> {
        Some(from_json(
            &super::json::probe_json(report, &self.stamp),
            "this probe run",
        ))
    }

    fn compare(&self, c: &crate::compare::Comparison) -> Option<String> {
        Some(render_html(&[Input {
            name: "this comparison".into(),
            doc: Saved::Compare(Box::new(c.clone())),
        }]))
    }

    fn plan(&self, p: super::Planned) -> Option<String> {
        Some(plan::page(p, &self.stamp))
    }

    fn watch(&self, run: &crate::watch::WatchRun) -> Option<String> {
        Some(from_json(
            &super::json::watch_json(run, &self.stamp),
            "this watch run",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The title names the targets, the host and the date, and the file
    /// when the page was drawn from one.
    #[test]
    fn titles_name_the_targets_the_host_and_the_date() {
        let doc = |targets: &str| {
            let text = format!(
                r#"{{"schema":"diskalign.check","schema_version":1,"host":"db-07","started_at":"2026-11-22T21:04:35Z","targets":[{targets}],"errors":[{{"path":"/dev/sdz"}}]}}"#
            );
            Saved::parse(&text, "run.json").unwrap()
        };
        let one = Input {
            name: "run.json".into(),
            doc: doc(r#"{"path":"/dev/sda"}"#),
        };
        assert_eq!(
            title(&[one]),
            "diskalign check of /dev/sda, /dev/sdz on db-07, 2026-11-22 21:04 UTC (run.json)"
        );
        let many: Vec<String> = (0..5)
            .map(|n| format!(r#"{{"path":"/dev/sd{n}"}}"#))
            .collect();
        let d = doc(&many.join(","));
        assert_eq!(
            describe(&d).unwrap(),
            "/dev/sd0, /dev/sd1, /dev/sd2 and 3 more on db-07, 2026-11-22 21:04 UTC"
        );
        // The page of a run's own document is named after the run.
        let stamp = crate::report::Stamp {
            host: "db-07".into(),
            started: std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_381_475),
        };
        let survey = crate::topology::Survey {
            disks: vec![],
            errors: vec![crate::errors::TargetError::new("sdq", "no such disk")],
        };
        let page = crate::report::Exporter::topology(&Html { stamp }, &survey).unwrap();
        assert!(
            page.contains(
                "<title>diskalign topology of sdq on db-07, 2026-11-22 21:04 UTC</title>"
            ),
            "{page}"
        );
        // An older document without host or start: its file name.
        let old = Saved::parse(r#"{"schema":"diskalign.topology"}"#, "old.json").unwrap();
        assert_eq!(
            title(&[Input {
                name: "old.json".into(),
                doc: old
            }]),
            "diskalign topology report: old.json"
        );
    }

    #[test]
    fn figures_are_cut_out_by_id() {
        let mut a = svg::Figure::new("run1-map-0", 10.0, 10.0, "map");
        a.add(svg::El::new("rect").at("width", 1.0));
        let b = svg::Figure::new("run1-zoom", 10.0, 10.0, "zoom");
        let page = format!("<p>x</p>{}<p>y</p>{}", a.finish(), b.finish());
        let f = html_figures(&page);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].0, "run1-map-0");
        assert!(f[0].1.starts_with("<?xml"));
        assert!(f[0].1.trim_end().ends_with("</svg>"));
        assert!(f[1].1.contains("zoom"));
    }

    #[test]
    fn text_from_a_run_never_becomes_markup() {
        // A model string, a path and a finding sentence are the device's
        // or the user's words: they must print as text.
        let evil = "<script>alert(1)</script>\"'&";
        let topo = format!(
            "{{\"schema\":\"diskalign.topology\",\"schema_version\":1,\"disks\":[{{\"name\":{e},\"device\":{e},\"model\":{e},\"topology\":{{\"optimal_io_size\":33553920}},\"findings\":[{{\"code\":\"optimal-io-suspicious\",\"severity\":\"warning\",\"message\":{e}}}]}}],\"errors\":[{{\"path\":{e},\"message\":{e}}}]}}",
            e = serde_json::to_string(evil).unwrap()
        );
        let check = format!(
            "{{\"schema\":\"diskalign.check\",\"schema_version\":1,\"targets\":[{{\"path\":{e},\"size_bytes\":1048576,\"verdict\":{e},\"partitions\":[{{\"number\":1,\"start_bytes\":512,\"end_bytes\":4095,\"size_bytes\":3584,\"name\":{e},\"findings\":[{{\"code\":\"start-not-4k\",\"severity\":\"error\",\"message\":{e}}}]}}],\"stack\":[{{\"kind\":\"partition\",\"name\":{e},\"device\":{e},\"children\":[{{\"kind\":\"filesystem\",\"name\":{e},\"device\":{e}}}]}}]}}]}}",
            e = serde_json::to_string(evil).unwrap()
        );
        for (name, text) in [("topology", topo), ("check", check)] {
            let doc = Saved::parse(&text, evil).unwrap();
            let page = render_html(&[Input {
                name: evil.into(),
                doc,
            }]);
            assert!(!page.contains("<script"), "{name}: markup got through");
            assert!(page.contains("&lt;script&gt;"), "{name}: the text is gone");
        }
    }
}
