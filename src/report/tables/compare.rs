//! `compare`'s CSV columns: the cells both probe runs measured, and the
//! findings that changed between two checks.

use super::probe::{percent, si};
use super::{opt4, opt_text};
use crate::compare::ProbeComparison;
use crate::compare::{CellRatio, Decision};
use crate::compare::{DeviceChange, SubmitterChange};
use crate::compare::{FindingChange, TargetChange};
use crate::findings::Status;
use crate::report::columns::{offset_label, Column};
use crate::report::style::Style;
use crate::units::human;

/// A cell of a probe comparison, with the comparison (for its target's path).
pub struct RatioRow<'a> {
    pub comparison: &'a ProbeComparison,
    pub cell: &'a CellRatio,
}

/// The rows of `cells` of comparison `c`.
pub fn ratio_rows<'a>(
    c: &'a ProbeComparison,
    cells: impl IntoIterator<Item = &'a CellRatio>,
) -> Vec<RatioRow<'a>> {
    cells
        .into_iter()
        .map(|cell| RatioRow {
            comparison: c,
            cell,
        })
        .collect()
}

type RR<'a> = Column<RatioRow<'a>>;

/// One row per cell both runs measured: `compare --format csv` of probe
/// runs, the terminal's cell-by-cell table (the target named only when
/// there are several: [`naming_rows`](crate::report::columns::naming_rows)),
/// which `-o` picks the columns of, and the table under each forest plot
/// of the page (its columns in [`RATIOS_HTML`]'s order: every number
/// exactly, each side's IOPS beside its rounds).
pub fn ratios<'a>() -> Vec<RR<'a>> {
    vec![
        RR::csv_only("target", |r| {
            r.comparison.target_path(r.cell.key.target).to_string()
        })
        .help("A's path of the target; the table's first column when the runs have several targets"),
        RR::both("pattern", "pattern", |r| r.cell.key.pattern.as_str().into())
            .not_in_html()
            .help("the access pattern: randread, randwrite"),
        RR::both("block_size", "bs", |r| r.cell.key.block_size.to_string())
            .shown_as(|r, _| human(r.cell.key.block_size))
            .size()
            .not_in_html()
            .help("the block size (bytes in CSV and with -b)"),
        RR::html_only("block_size_bytes", "block size (bytes)", |r| {
            r.cell.key.block_size.to_string()
        })
        .num()
        .help("the block size in bytes, as the page's table writes it"),
        RR::both("offset", "offset", |r| r.cell.key.offset.to_string())
            .shown_as(|r, _| offset_label(r.cell.key.offset))
            .not_in_html()
            .help("the bytes each I/O starts past an aligned boundary (the table writes 63.5K for 65024)"),
        RR::html_only("offset_bytes", "offset (bytes)", |r| {
            r.cell.key.offset.to_string()
        })
        .num()
        .help("the offset in bytes, as the page's table writes it"),
        RR::human_only("a", "A IOPS (rounds)", |r| {
            format!("{} ({})", si(r.cell.a_iops), r.cell.a_rounds)
        })
        .not_in_html()
        .help("A's IOPS (the geometric mean of its rounds) and its rounds"),
        RR::human_only("b", "B IOPS (rounds)", |r| {
            format!("{} ({})", si(r.cell.b_iops), r.cell.b_rounds)
        })
        .not_in_html()
        .help("B's IOPS and its rounds"),
        RR::csv_only("a_iops", |r| format!("{:.1}", r.cell.a_iops))
            .shown_as(|r, _| format!("{:.0}", r.cell.a_iops))
            .in_html()
            .num()
            .long("A IOPS")
            .help("A's IOPS: the geometric mean of its rounds"),
        RR::csv_only("b_iops", |r| format!("{:.1}", r.cell.b_iops))
            .shown_as(|r, _| format!("{:.0}", r.cell.b_iops))
            .in_html()
            .num()
            .long("B IOPS")
            .help("B's IOPS: the geometric mean of its rounds"),
        RR::csv_only("a_rounds", |r| r.cell.a_rounds.to_string())
            .in_html()
            .num()
            .long("A rounds")
            .help("the rounds A measured the cell in"),
        RR::csv_only("b_rounds", |r| r.cell.b_rounds.to_string())
            .in_html()
            .num()
            .long("B rounds")
            .help("the rounds B measured the cell in"),
        RR::csv_only("ratio", |r| opt4(r.cell.ratio))
            .shown_as(|r, _| fixed(r.cell.ratio, 3))
            .in_html()
            .num()
            .long("B/A")
            .help("B's IOPS over A's (0.4800: B does 52 % fewer)"),
        RR::human_only("b_over_a", "B/A", |r| opt4(r.cell.ratio))
            .shown_as(|r, st| {
                r.cell
                    .ratio
                    .map_or("-".into(), |x| percent(x, r.cell.significant, st))
            })
            .not_in_html()
            .help("B/A as B's difference from A (-52%), starred when significant after Holm's correction"),
        RR::human_only("interval", "interval", |r| interval(r.cell))
            .not_in_html()
            .help("B/A's interval as differences from A (-52%..-48%), at the level Holm judged the cell at"),
        RR::html_only("ci95", "interval", |r| {
            r.cell
                .ci95
                .map_or("-".into(), |[lo, hi]| format!("{lo:.3}–{hi:.3}"))
        })
        .num()
        .help("B/A's interval as ratios, as the page's table writes it"),
        RR::csv_only("ci_lo", |r| opt4(r.cell.ci95.map(|c| c[0])))
            .help("the lower end of B/A's interval (empty for a cell not tested)"),
        RR::csv_only("ci_hi", |r| opt4(r.cell.ci95.map(|c| c[1])))
            .help("the upper end of B/A's interval"),
        RR::csv_only("ci_level", |r| opt4(r.cell.ci_level))
            .shown_as(|r, _| fixed(r.cell.ci_level.map(|l| l * 100.0), 2))
            .in_html()
            .num()
            .long("level (%)")
            .help("the interval's level, at least 0.95 (the table writes it in percent)"),
        RR::csv_only("p_value", |r| opt4(r.cell.p_value))
            .help("Welch's p-value of the cell"),
        RR::csv_only("p_adjusted", |r| opt4(r.cell.p_adjusted))
            .shown_as(|r, _| fixed(r.cell.p_adjusted, 4))
            .in_html()
            .num()
            .long("p (Holm)")
            .help("the p-value adjusted by Holm over the cells tested"),
        RR::csv_only("significant", |r| r.cell.significant.to_string())
            .flag()
            .help("true when B/A is significant after Holm's correction (1 with -r and -P)"),
        RR::both("decision", "decision", |r| r.cell.decision.as_str().into())
            .shown_as(|r, st| decision(r.cell.decision, st))
            .help("slower, faster, same, open or untested (a side with fewer than two rounds, such as one fio pass): B against A"),
    ]
}

/// The page's order of the HTML columns of [`ratios`] (its CSV keeps
/// the order it has always had).
pub const RATIOS_HTML: [&str; 11] = [
    "block_size_bytes",
    "offset_bytes",
    "a_iops",
    "a_rounds",
    "b_iops",
    "b_rounds",
    "ratio",
    "ci95",
    "ci_level",
    "p_adjusted",
    "decision",
];

/// `v` with `places` decimals, `-` when there is none.
fn fixed(v: Option<f64>, places: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.places$}"))
}

/// A decision coloured as what it means for B.
fn decision(d: Decision, st: &Style) -> String {
    let w = d.as_str();
    match d {
        Decision::Slower => st.bad(w),
        Decision::Faster => st.good(w),
        Decision::Open => st.warn(w),
        Decision::Same | Decision::Untested => st.dim(w),
    }
}

/// A ratio as a difference from A: `-52%`, `+6.2%`, `-0.4%`.
fn diff(ratio: f64) -> String {
    let pct = (ratio - 1.0) * 100.0;
    match pct.abs() < 10.0 {
        true => format!("{pct:+.1}%"),
        false => format!("{pct:+.0}%"),
    }
}

/// `-52%..-48%`: the interval as differences from A.
fn interval(r: &CellRatio) -> String {
    match r.ci95 {
        Some([lo, hi]) => format!("{}..{}", diff(lo), diff(hi)),
        None => "-".into(),
    }
}

/// A field of the environment of two probe runs, with the comparison
/// (to name its target when there are several).
pub struct EnvRow<'a> {
    pub comparison: &'a ProbeComparison,
    pub field: &'a crate::compare::EnvField,
}

/// The rows of `fields` of comparison `c`.
pub fn env_rows<'a>(
    c: &'a ProbeComparison,
    fields: impl IntoIterator<Item = &'a crate::compare::EnvField>,
) -> Vec<EnvRow<'a>> {
    fields
        .into_iter()
        .map(|field| EnvRow {
            comparison: c,
            field,
        })
        .collect()
}

type ER<'a> = Column<EnvRow<'a>>;

/// The environment fields of two probe runs, A's value and B's (`-`:
/// not recorded): the terminal's table of those that differ; and the
/// page's table of them all, which names a field's target whenever it
/// has one, says "not recorded" in words and marks each field
/// `differs`, `same` or `not compared`.
pub fn environment<'a>() -> Vec<ER<'a>> {
    vec![
        ER::human_only("field", "field", |r| env_label(r)).not_in_html(),
        ER::html_only("field_of", "field", |r| match r.field.target {
            Some(t) => format!("{} ({})", r.field.field, crate::report::target_label(t)),
            None => r.field.field.clone(),
        }),
        ER::human_only("a", "A", |r| recorded(&r.field.a)).not_in_html(),
        ER::html_only("a_value", "A", |r| in_words(&r.field.a)),
        ER::human_only("b", "B", |r| recorded(&r.field.b)).not_in_html(),
        ER::html_only("b_value", "B", |r| in_words(&r.field.b)),
        ER::html_only("compared", "", |r| {
            let f = r.field;
            match (f.differs, f.a.is_some() && f.b.is_some()) {
                (true, _) => "differs",
                (false, false) => "not compared",
                (false, true) => "same",
            }
            .into()
        })
        .class(|r| r.field.differs.then(|| "sev-warning".into())),
    ]
}

/// A side's value, "not recorded" in words when it was not.
fn in_words(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "not recorded".into())
}

/// A side's value, `-` when not recorded.
fn recorded(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "-".into())
}

/// A field's name, with its target's when the runs have several.
pub fn env_label(r: &EnvRow) -> String {
    let f = r.field;
    match f.target {
        Some(t) if r.comparison.target_count() > 1 && f.field == "target" => {
            crate::report::target_label(t)
        }
        Some(t) if r.comparison.target_count() > 1 => {
            format!("{} ({})", f.field, crate::report::target_label(t))
        }
        _ => f.field.clone(),
    }
}

type FC = Column<FindingChange>;

/// One row per finding that appeared, disappeared or changed: the CSV
/// (`compare --format csv` of check and of watch runs), the table `-o`
/// picks the columns of, and the page's table of each kind of change
/// (where, the code, the severity in A and in B, the finding's words).
pub fn changes() -> Vec<FC> {
    vec![
        FC::csv_only("change", |f| f.change.as_str().into())
            .in_table()
            .help("appeared, disappeared or changed (its severity or words)"),
        FC::html_only("where", "where", |f| {
            crate::report::html::subject(&f.subject())
        })
        .in_table()
        .help("what the finding is about: the target, partition and layer, briefly"),
        FC::csv_only("target", |f| opt_text(&f.target))
            .help("the target (a watch run's device as /dev/NAME); empty for the md arrays and volume groups assembled across targets"),
        FC::csv_only("partition", |f| opt_text(&f.partition))
            .help("the partition's number; empty for the whole target"),
        FC::csv_only("layer", |f| opt_text(&f.layer))
            .help("the layer's path (partition 1 / ext4); empty for none"),
        FC::csv_only("code", |f| f.code.clone())
            .in_html()
            .in_table()
            .help("the finding's code (docs/findings.md)"),
        FC::csv_only("severity_a", |f| opt_text(&f.severity_a))
            .titled("A")
            .shown_as(|f, _| severity(f.severity_a))
            .class(|f| severity_class(f.severity_a))
            .in_html()
            .in_table()
            .long("A")
            .help("its severity in A; empty (- in the table) when A did not have it"),
        FC::csv_only("severity_b", |f| opt_text(&f.severity_b))
            .titled("B")
            .shown_as(|f, _| severity(f.severity_b))
            .class(|f| severity_class(f.severity_b))
            .in_html()
            .in_table()
            .long("B")
            .help("its severity in B; empty (- in the table) when B does not have it"),
        FC::csv_only("message_a", |f| opt_text(&f.message_a))
            .help("its words in A; empty when A did not have it"),
        FC::csv_only("message_b", |f| opt_text(&f.message_b))
            .help("its words in B; empty when B does not have it"),
        FC::html_only("finding", "finding", |f| {
            f.message_b
                .clone()
                .or_else(|| f.message_a.clone())
                .unwrap_or_default()
        })
        .in_table()
        .help("its words: B's, or A's for one that disappeared"),
    ]
}

/// A side's severity, `-` on the side that did not have the finding.
fn severity(s: Option<crate::findings::Severity>) -> String {
    s.map_or("-".into(), |s| s.as_str().into())
}

fn severity_class(s: Option<crate::findings::Severity>) -> Option<String> {
    s.map(|s| format!("sev-{}", s.as_str()))
}

/// A count, `-` on the side that did not see it.
fn count(v: Option<u64>) -> String {
    v.map_or("-".into(), |n| n.to_string())
}

/// A share as a percentage, `-` on the side that did not see it.
fn share_pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.1}%", 100.0 * x))
}

/// A row of a watch comparison: a device and direction (and perhaps one
/// of its submitters) with its figures in A and in B.
trait BothRuns {
    fn device(&self) -> &str;
    fn direction(&self) -> Option<crate::sys::Direction>;
    fn ios(&self) -> [Option<u64>; 2];
    fn straddle_share(&self) -> [Option<f64>; 2];
    fn sub_physical_share(&self) -> [Option<f64>; 2];
}

macro_rules! both_runs {
    ($t:ty) => {
        impl BothRuns for $t {
            fn device(&self) -> &str {
                &self.device
            }
            fn direction(&self) -> Option<crate::sys::Direction> {
                self.direction
            }
            fn ios(&self) -> [Option<u64>; 2] {
                [self.ios_a, self.ios_b]
            }
            fn straddle_share(&self) -> [Option<f64>; 2] {
                [self.straddle_share_a, self.straddle_share_b]
            }
            fn sub_physical_share(&self) -> [Option<f64>; 2] {
                [self.sub_physical_share_a, self.sub_physical_share_b]
            }
        }
    };
}

both_runs!(DeviceChange);
both_runs!(SubmitterChange);

/// The device and direction a row is of.
fn where_columns<R: BothRuns>() -> Vec<Column<R>> {
    vec![
        Column::human_only("device", "device", |r: &R| r.device().to_string())
            .shown_as(|r: &R, st| st.bold(r.device())),
        Column::human_only("dir", "dir", |r: &R| {
            r.direction().map_or("", |x| x.as_str()).into()
        })
        .long("direction"),
    ]
}

/// Its figures in A and in B.
fn figure_columns<R: BothRuns>() -> Vec<Column<R>> {
    vec![
        Column::human_only("ios_a", "ios A", |r: &R| count(r.ios()[0]))
            .num()
            .long("I/Os A"),
        Column::human_only("ios_b", "ios B", |r: &R| count(r.ios()[1]))
            .num()
            .long("I/Os B"),
        Column::human_only("straddle_a", "straddle A", |r: &R| {
            share_pct(r.straddle_share()[0])
        })
        .num()
        .long("straddling A"),
        Column::human_only("straddle_b", "straddle B", |r: &R| {
            share_pct(r.straddle_share()[1])
        })
        .num()
        .long("straddling B"),
        Column::human_only("sub_physical_a", "sub-phys A", |r: &R| {
            share_pct(r.sub_physical_share()[0])
        })
        .num()
        .long("below the physical block A"),
        Column::human_only("sub_physical_b", "sub-phys B", |r: &R| {
            share_pct(r.sub_physical_share()[1])
        })
        .num()
        .long("below the physical block B"),
    ]
}

type DC = Column<DeviceChange>;

/// Two watch runs, one row per device and direction: the human table and
/// the HTML one; the share of writes across a zone boundary only where
/// one of `rows` has it (a zoned device in either run).
pub fn watch_devices_compared(rows: &[&DeviceChange]) -> Vec<DC> {
    let mut cols = where_columns();
    cols.extend(figure_columns());
    let zoned = rows
        .iter()
        .any(|r| r.zone_crossing_share_a.is_some() || r.zone_crossing_share_b.is_some());
    if zoned {
        cols.extend(zone_columns());
    }
    cols
}

/// The share of writes across a zone boundary in A and in B.
fn zone_columns() -> Vec<DC> {
    vec![
        DC::human_only("zone_crossing_a", "x-zone A", |r| {
            share_pct(r.zone_crossing_share_a)
        })
        .num()
        .long("across a zone boundary A"),
        DC::human_only("zone_crossing_b", "x-zone B", |r| {
            share_pct(r.zone_crossing_share_b)
        })
        .num()
        .long("across a zone boundary B"),
    ]
}

type SC = Column<SubmitterChange>;

/// Two watch runs, one row per device, direction and submitter.
pub fn watch_submitters_compared() -> Vec<SC> {
    let mut cols = where_columns();
    cols.push(SC::human_only("submitter", "submitter", |x| {
        x.submitter.clone()
    }));
    cols.push(SC::human_only("cgroup", "cgroup", |x| {
        x.cgroup.clone().unwrap_or_else(|| "-".into())
    }));
    cols.extend(figure_columns());
    cols
}

/// One side of a target in a check comparison: its status, `checked`
/// (a document without one), why it could not be checked, or `-` when
/// the run did not have it.
fn side(present: bool, status: Option<Status>, error: &Option<String>, st: &Style) -> String {
    match (present, status, error) {
        (_, _, Some(e)) => st.bad(&format!("not checked: {e}")),
        (true, Some(s), None) => st.status(s),
        (true, None, None) => "checked".into(),
        (false, _, None) => st.dim("-"),
    }
}

fn side_class(status: Option<Status>, error: &Option<String>) -> Option<String> {
    match (status, error) {
        (_, Some(_)) => Some("sev-error".into()),
        (Some(s), None) => Some(format!("status-{}", s.as_str())),
        (None, None) => None,
    }
}

fn target_name(t: &TargetChange) -> String {
    match &t.path_b {
        Some(b) => format!("{} (B: {b})", t.target),
        None => t.target.clone(),
    }
}

type TC = Column<TargetChange>;

/// Two check runs, one row per target: its status in A and in B.
pub fn check_targets_compared() -> Vec<TC> {
    vec![
        TC::human_only("target", "target", target_name).shown_as(|t, st| st.bold(&target_name(t))),
        TC::human_only("a", "A", |t| {
            side(t.in_a, t.status_a, &t.error_a, &Style::plain())
        })
        .shown_as(|t, st| side(t.in_a, t.status_a, &t.error_a, st))
        .class(|t| side_class(t.status_a, &t.error_a)),
        TC::human_only("b", "B", |t| {
            side(t.in_b, t.status_b, &t.error_b, &Style::plain())
        })
        .shown_as(|t, st| side(t.in_b, t.status_b, &t.error_b, st))
        .class(|t| side_class(t.status_b, &t.error_b)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::columns::{html, render};
    use crate::report::style::{TableForm, TableMode};

    fn two() -> Vec<DeviceChange> {
        vec![
            DeviceChange {
                device: "sda1".into(),
                ios_a: Some(1000),
                ios_b: Some(980),
                straddle_share_a: Some(0.875),
                straddle_share_b: Some(0.0),
                ..DeviceChange::default()
            },
            DeviceChange {
                device: "sdb".into(),
                ios_b: Some(5),
                ..DeviceChange::default()
            },
        ]
    }

    /// The watch comparison's device table is one list of columns, drawn
    /// for the terminal (aligned, raw, pairs) and as HTML from it.
    #[test]
    fn one_column_list_draws_every_form_of_the_watch_comparison() {
        let devices = two();
        let rows: Vec<&DeviceChange> = devices.iter().collect();
        let cols = watch_devices_compared(&rows);
        let picked: Vec<&DC> = cols.iter().collect();
        assert!(
            picked.iter().all(|c| !c.id.starts_with("zone")),
            "no zoned device: no zone columns"
        );
        let aligned = render(&picked, &rows, &Style::plain(), "");
        let lines: Vec<&str> = aligned.lines().collect();
        assert!(lines[0].starts_with("device  dir  ios A"), "{aligned}");
        assert!(
            lines[1].contains("87.5%") && lines[1].contains("0.0%"),
            "{aligned}"
        );
        // The side that did not see a device says so.
        assert!(
            lines[2].starts_with("sdb") && lines[2].contains(" -  "),
            "{aligned}"
        );
        let mut st = Style::plain();
        st.table = TableForm {
            mode: TableMode::Pairs,
            ..TableForm::default()
        };
        let pairs = render(&picked, &rows, &st, "");
        assert!(
            pairs.starts_with("DEVICE=\"sda1\" DIR=\"\" IOS-A=\"1000\""),
            "{pairs}"
        );
        let html = html("w-devices", "caption", &picked, &rows);
        assert!(html.contains("<th>I/Os A</th>") && html.contains("<th>direction</th>"));
        assert!(html.contains("<td class=\"num\">87.5%</td>"), "{html}");
        assert_eq!(html.matches("<tr>").count(), 3, "{html}");
    }

    /// The page's forest tables ask for the HTML columns of the cell
    /// list, every one of them and no other.
    #[test]
    fn the_pages_order_of_the_cell_columns_is_their_html_set() {
        let all = ratios();
        let mut html: Vec<&str> = all.iter().filter(|c| c.html).map(|c| &*c.id).collect();
        let mut order = RATIOS_HTML.to_vec();
        html.sort_unstable();
        order.sort_unstable();
        assert_eq!(html, order);
    }

    /// A target B could not check says why in both forms; the HTML page
    /// used to say "not in this run" instead.
    #[test]
    fn a_target_not_checked_says_why_in_the_terminal_and_the_page() {
        let t = TargetChange {
            target: "disk.img".into(),
            in_a: true,
            status_a: Some(Status::Misaligned),
            error_b: Some("permission denied".into()),
            ..TargetChange::default()
        };
        let cols = check_targets_compared();
        let picked: Vec<&TC> = cols.iter().collect();
        let text = render(&picked, &[&t], &Style::plain(), "");
        assert!(
            text.contains("MISALIGNED") && text.contains("not checked: permission denied"),
            "{text}"
        );
        let page = html("t", "c", &picked, &[&t]);
        assert!(
            page.contains("<td class=\"sev-error\">not checked: permission denied</td>"),
            "{page}"
        );
        assert!(
            page.contains("<td class=\"status-misaligned\">MISALIGNED</td>"),
            "{page}"
        );
    }
}
