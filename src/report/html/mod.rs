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
//! (scales, ticks, colours) and is tested apart from the drawing.

pub mod check;
pub mod compare;
mod look;
pub mod page;
pub mod probe;
pub mod scale;
pub mod svg;
pub mod topology;

use crate::saved::Saved;

/// One saved run and the name it is shown by (its file name).
pub struct Input {
    pub name: String,
    pub doc: Saved,
}

/// The page's title: what is in it.
fn title(inputs: &[Input]) -> String {
    match inputs {
        [one] => format!("diskalign {} report: {}", one.doc.kind(), one.name),
        _ => format!("diskalign report: {} runs", inputs.len()),
    }
}

/// The page of several saved runs, one section each, in the order given.
/// `n` numbers each run's ids so two runs of one kind never share one.
pub fn render(inputs: &[Input]) -> String {
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
            }
        })
        .collect();
    let names: Vec<String> = inputs.iter().map(|i| i.name.clone()).collect();
    page::document(&title(inputs), &names, &sections)
}

/// Every figure of a page, as (id, standalone SVG): `report --figures`
/// writes each to its own file. The figures draw with presentation
/// attributes only, so each stands alone.
pub fn figures(page: &str) -> Vec<(String, String)> {
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

fn from_json(text: &str, name: &str) -> String {
    match Saved::parse(text, name) {
        Ok(doc) => render(&[Input {
            name: name.to_string(),
            doc,
        }]),
        // Our own document always reads back; this would be a bug.
        Err(e) => page::document("diskalign report", &[], &[page::para(&e.to_string())]),
    }
}

impl super::Exporter for Html {
    fn check(&self, run: &crate::check::CheckRun) -> String {
        from_json(&super::json::check(run, &self.stamp), "this check run")
    }

    fn topology(&self, survey: &crate::topology::Survey) -> String {
        from_json(
            &super::json::topology(&survey.disks, &survey.errors, &self.stamp),
            "this topology run",
        )
    }

    fn probe(&self, report: &crate::probe::report::ProbeReport) -> String {
        from_json(&super::json::probe(report, &self.stamp), "this probe run")
    }

    fn compare(&self, c: &crate::compare::Comparison) -> String {
        render(&[Input {
            name: "this comparison".into(),
            doc: Saved::Compare(Box::new(c.clone())),
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_cut_out_by_id() {
        let mut a = svg::Figure::new("run1-map-0", 10.0, 10.0, "map");
        a.add(svg::El::new("rect").at("width", 1.0));
        let b = svg::Figure::new("run1-zoom", 10.0, 10.0, "zoom");
        let page = format!("<p>x</p>{}<p>y</p>{}", a.finish(), b.finish());
        let f = figures(&page);
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
            let page = render(&[Input {
                name: evil.into(),
                doc,
            }]);
            assert!(!page.contains("<script"), "{name}: markup got through");
            assert!(page.contains("&lt;script&gt;"), "{name}: the text is gone");
        }
    }
}
