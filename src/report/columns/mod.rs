//! The column model shared by the human tables and the CSV: each column
//! has a CSV name and a raw value, a human title and a display value, or
//! only one of the two (the human "parted opt/min" is two CSV columns).
//! A table prints in lsblk's modes: aligned (the default), raw (`-r`) or
//! `KEY="value"` pairs (`-P`), with or without its header (`-n`), sizes
//! read by people or in bytes (`-b`).
//!
//! This is the engine (the column, selection, fitting, the aligned, raw,
//! pair and CSV forms, and a grid's columns made at run time): it knows
//! no command and no type of theirs. Each command's rows and column
//! lists are in `report::tables`, which hands the engine its rows.

use super::style::{Style, TableMode};
use std::borrow::Cow;

mod grid;

pub use grid::{grid, offset_label, Entry};

/// How a column reads its value from a row: a function of the row, or
/// the `at`-th entry of a row of entries (a grid's column per offset,
/// made when the offsets are known).
pub enum Get<R: ?Sized> {
    Row(fn(&R) -> String),
    Entry(usize, fn(&R, usize) -> String),
}

/// How a column shows its value to people, beside [`Get`].
pub enum Show<R: ?Sized> {
    Row(fn(&R, &Style) -> String),
    Entry(fn(&R, usize, &Style) -> String),
}

// By hand: a derive would ask `R: Copy`.
impl<R: ?Sized> Clone for Get<R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R: ?Sized> Copy for Get<R> {}
impl<R: ?Sized> Clone for Show<R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R: ?Sized> Copy for Show<R> {}

/// One column over rows of type `R`.
pub struct Column<R: ?Sized> {
    /// The name `-o` selects it by, and the CSV header of a CSV column.
    pub id: Cow<'static, str>,
    /// The human table's title.
    pub title: Cow<'static, str>,
    /// In the CSV by default.
    pub csv: bool,
    /// In the human table by default.
    pub human: bool,
    /// In the HTML table by default (the human table's columns, and any
    /// the page has room for that the terminal has not).
    pub html: bool,
    /// A CSV column that stands for part of a human one (`parted_optimal`
    /// of `parted`): selecting that one selects it.
    pub part_of: Option<&'static str>,
    /// What the column means (`--list-columns`).
    pub help: &'static str,
    /// The raw value (bytes, numbers, names) for CSV.
    pub raw: Get<R>,
    /// The value as people read it; None: the raw value.
    pub shown: Option<Show<R>>,
    /// Hidden first when the table is wider than the terminal: 0 never,
    /// higher sooner.
    pub drop: u8,
    /// A size: `-b` shows its raw value (bytes) instead.
    pub size: bool,
    /// A yes/no value (`true`/`false` in CSV), written `1`/`0` by `-r`
    /// and `-P`, as lsblk writes ROTA and RM.
    pub flag: bool,
    /// A number: right-aligned in HTML.
    pub numeric: bool,
    /// The HTML table's header, where the terminal's title is abbreviated
    /// ("I/Os A" for "ios A"); None: the title.
    pub long: Option<&'static str>,
    /// The HTML cell's CSS class (`status-misaligned`, `sev-error`), as
    /// the terminal colours the same value.
    pub class: Option<fn(&R) -> Option<String>>,
}

impl<R: ?Sized> Column<R> {
    pub(crate) const fn both(id: &'static str, title: &'static str, raw: fn(&R) -> String) -> Self {
        Column::new(id, title, raw, [true, true, true])
    }

    /// A column shown by default in `[csv, human, html]`.
    const fn new(
        id: &'static str,
        title: &'static str,
        raw: fn(&R) -> String,
        [csv, human, html]: [bool; 3],
    ) -> Self {
        Column {
            id: Cow::Borrowed(id),
            title: Cow::Borrowed(title),
            csv,
            human,
            html,
            part_of: None,
            help: "",
            raw: Get::Row(raw),
            shown: None,
            drop: 0,
            size: false,
            flag: false,
            numeric: false,
            long: None,
            class: None,
        }
    }

    pub(crate) const fn csv_only(id: &'static str, raw: fn(&R) -> String) -> Self {
        Column::new(id, id, raw, [true, false, false])
    }

    /// In the HTML table only (the terminal's has no room for it; `-o`
    /// still picks it there).
    pub(crate) const fn html_only(
        id: &'static str,
        title: &'static str,
        raw: fn(&R) -> String,
    ) -> Self {
        Column::new(id, title, raw, [false, false, true])
    }

    pub(crate) const fn human_only(
        id: &'static str,
        title: &'static str,
        raw: fn(&R) -> String,
    ) -> Self {
        Column::new(id, title, raw, [false, true, true])
    }

    /// A column of a grid, made at run time: entry `at` of each row,
    /// under a title that is a value (an offset), in every output.
    pub(crate) fn entry(
        id: String,
        title: String,
        at: usize,
        raw: fn(&R, usize) -> String,
        shown: fn(&R, usize, &Style) -> String,
    ) -> Self {
        Column {
            id: Cow::Owned(id),
            title: Cow::Owned(title),
            raw: Get::Entry(at, raw),
            shown: Some(Show::Entry(shown)),
            ..Column::both("", "", |_| String::new())
        }
    }

    /// The human title of a column made `csv_only` (whose title is its
    /// id), for the table `-o` prints it in.
    pub(crate) fn titled(mut self, title: &'static str) -> Self {
        self.title = Cow::Borrowed(title);
        self
    }

    /// In no table by default, only where `-o` names it (or the engine
    /// puts it first to name a row's disk: [`naming_rows`]).
    pub(crate) const fn on_request(mut self) -> Self {
        self.csv = false;
        self.human = false;
        self.html = false;
        self
    }

    /// Shown in the human table by default too (a CSV or HTML column).
    pub(crate) const fn in_table(mut self) -> Self {
        self.human = true;
        self
    }

    pub(crate) const fn shown_as(mut self, shown: fn(&R, &Style) -> String) -> Self {
        self.shown = Some(Show::Row(shown));
        self
    }

    pub(crate) const fn help(mut self, help: &'static str) -> Self {
        self.help = help;
        self
    }

    pub(crate) const fn drop(mut self, rank: u8) -> Self {
        self.drop = rank;
        self
    }

    pub(crate) const fn part_of(mut self, id: &'static str) -> Self {
        self.part_of = Some(id);
        self
    }

    /// A size, in bytes with `-b`.
    pub(crate) const fn size(mut self) -> Self {
        self.size = true;
        self
    }

    /// A yes/no value, `1`/`0` in the raw and pair forms.
    pub(crate) const fn flag(mut self) -> Self {
        self.flag = true;
        self
    }

    /// A column of the terminal's table the HTML page leaves out (the page
    /// has it in another table).
    pub(crate) const fn not_in_html(mut self) -> Self {
        self.html = false;
        self
    }

    /// A column of the CSV (or `-o`) the HTML table shows too.
    pub(crate) const fn in_html(mut self) -> Self {
        self.html = true;
        self
    }

    /// A number, right-aligned in HTML.
    pub(crate) const fn num(mut self) -> Self {
        self.numeric = true;
        self
    }

    /// The HTML header, spelled out.
    pub(crate) const fn long(mut self, title: &'static str) -> Self {
        self.long = Some(title);
        self
    }

    /// The HTML cell's CSS class.
    pub(crate) const fn class(mut self, class: fn(&R) -> Option<String>) -> Self {
        self.class = Some(class);
        self
    }

    /// Where the column shows by default: "table, csv", "table", "csv",
    /// "csv, html" (a CSV column the page shows too), "html".
    fn shown_in(&self) -> &'static str {
        match (self.human, self.csv) {
            (true, true) => "table, csv",
            (true, false) => "table",
            (false, true) if self.html => "csv, html",
            (false, true) => "csv",
            (false, false) if self.html => "html",
            (false, false) => "on request",
        }
    }

    /// The raw value of row `r` (the CSV's).
    pub fn raw(&self, r: &R) -> String {
        match self.raw {
            Get::Row(f) => f(r),
            Get::Entry(at, f) => f(r, at),
        }
    }

    fn value(&self, r: &R, st: &Style) -> String {
        match (self.shown, self.raw) {
            (Some(_), _) if self.size && st.table.bytes => self.raw(r),
            (Some(Show::Row(f)), _) => f(r, st),
            (Some(Show::Entry(f)), Get::Entry(at, _)) => f(r, at, st),
            _ => self.raw(r),
        }
    }

    /// The value in the forms programs read (`-r`, `-P`), as lsblk
    /// writes its own there: a size as lsblk's `512M` (bytes with `-b`),
    /// a yes/no as `1`/`0`, anything else as the table shows it.
    fn raw_value(&self, r: &R, st: &Style) -> String {
        let raw = self.raw(r);
        if self.size && !st.table.bytes {
            return raw.parse().map_or(raw, crate::units::lsblk_size);
        }
        if self.flag {
            return match raw.as_str() {
                "true" => "1".into(),
                "false" => "0".into(),
                _ => raw,
            };
        }
        self.value(r, st)
    }

    /// The key of `-P` and the header of `-r`: the title in upper case,
    /// a space as `-`, as lsblk prints its column names (`PHY-SEC`, the
    /// title of the value shown, so `SIZE="1 GiB"` and with `-b`
    /// `SIZE="1073741824"`, as lsblk -P and -b do).
    fn key(&self) -> String {
        key_of(&self.title, &self.id)
    }
}

/// The columns `-o` asked for, in its order; `+COL` adds to the default
/// set (`human` or `csv`); None asks for the default set.
pub fn select<'c, R: ?Sized>(
    cols: &'c [Column<R>],
    asked: Option<&[String]>,
    default: fn(&Column<R>) -> bool,
) -> Vec<&'c Column<R>> {
    let Some(asked) = asked else {
        return cols.iter().filter(|c| default(c)).collect();
    };
    let mut out: Vec<&Column<R>> = if asked.iter().all(|a| a.starts_with('+')) {
        cols.iter().filter(|c| default(c)).collect()
    } else {
        vec![]
    };
    for a in asked {
        let id = a.trim_start_matches('+');
        for c in cols.iter().filter(|c| c.id == id) {
            if !out.iter().any(|o| o.id == c.id) {
                out.push(c);
            }
        }
    }
    out
}

/// The columns of a table of `items` things (targets, disks), with the
/// column `id` that names each first when there are several and it was
/// not picked: every row of a table of several disks says which one it
/// is of, as lsblk's rows carry NAME whatever `-o` asked for.
pub fn naming_rows<'c, R: ?Sized>(
    all: &'c [Column<R>],
    mut picked: Vec<&'c Column<R>>,
    id: &str,
    items: usize,
) -> Vec<&'c Column<R>> {
    if items > 1 && !picked.iter().any(|c| c.id == id) {
        picked.splice(0..0, all.iter().filter(|c| c.id == id));
    }
    picked
}

/// `--list-columns`: each column's id, its title in the table, where it
/// shows by default, and what it means (wrapped to the terminal), under
/// a line naming the table (`of`: "`check`").
pub fn list<R: ?Sized>(cols: &[Column<R>], of: &str, st: &Style) -> String {
    let id_w = cols.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let title_w = cols.iter().map(|c| c.title.len()).max().unwrap_or(0);
    let mut out = st.line(
        "",
        &format!("Columns of {of} (-o COL,COL picks them in that order; -o +COL adds to the default set):"),
        "",
    );
    for c in cols {
        let head = format!(
            "  {:id_w$}  {:title_w$}  {:10}  ",
            c.id,
            c.title,
            c.shown_in()
        );
        let hang = " ".repeat(head.len());
        out.push_str(&st.line(&head, c.help, &hang));
    }
    out
}

/// The columns for `--help` and the man page: one paragraph per column,
/// which reflows wherever it is shown; `of` names the table where a
/// command has several.
pub fn help<R: ?Sized>(cols: &[Column<R>], of: Option<&str>) -> String {
    let of = of.map(|o| format!(" of {o}")).unwrap_or_default();
    let mut out = format!(
        "Columns{of} (-o COL,COL picks them in that order; -o +COL adds to the default set):\n",
    );
    for c in cols {
        out.push_str(&format!(
            "\n{} (\"{}\"; {}): {}\n",
            c.id,
            c.title,
            c.shown_in(),
            c.help
        ));
    }
    out
}

/// Every column `-o` accepts of a table: (id, title).
pub fn ids<R: ?Sized>(cols: &[Column<R>]) -> Vec<(String, String)> {
    cols.iter()
        .map(|c| (c.id.to_string(), c.title.to_string()))
        .collect()
}

/// A title as a `-P` key and `-r` header: upper case, a space as `-`.
/// A title with other characters (`#`, `start(bytes)`, `parted opt/min`)
/// would make a key a shell cannot read back, so the column's id stands
/// in for it, upper case (`NUMBER`, `START_BYTES`): the value under it is
/// still the one shown.
fn key_of(title: &str, id: &str) -> String {
    let key = title.to_ascii_uppercase().replace(' ', "-");
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if !key.is_empty() && key.chars().all(plain) {
        key
    } else {
        id.to_ascii_uppercase()
    }
}

/// `-o` as typed (`COL` or `+COL`) as column ids. A column is named by
/// its id (`physical_block_size`), its title (`phy-sec`) or its key
/// (`PHY-SEC`, `PARTED-OPT/MIN`), in any case, as lsblk's `-o` takes
/// `NAME` or `phy-sec`; an id wins over another column's title. Err: the
/// one line that refuses the first name no column has, naming the table
/// (`of`: "check", "compare of two probe runs") and the `command` whose
/// `--list-columns` lists them.
pub fn resolve(
    asked: &[String],
    cols: &[(String, String)],
    of: &str,
    command: &str,
) -> Result<Vec<String>, String> {
    asked
        .iter()
        .map(|a| {
            let name = a.trim_start_matches('+');
            let plus = &a[..a.len() - name.len()];
            let is = |s: &str| s.eq_ignore_ascii_case(name);
            let by_id = cols.iter().find(|(id, _)| is(id));
            let by_title = || {
                cols.iter()
                    .find(|(id, t)| is(t) || is(&t.replace(' ', "-")) || is(&key_of(t, id)))
            };
            match by_id.or_else(by_title) {
                Some((id, _)) => Ok(format!("{plus}{id}")),
                None => Err(format!(
                    "{a:?} is not a column of {of}; {command} --list-columns names them ({})",
                    cols.iter()
                        .map(|(id, _)| id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        })
        .collect()
}

/// The human table of `cols`: a dimmed title row, then one row per item.
pub fn table_rows<R: ?Sized>(cols: &[&Column<R>], rows: &[&R], st: &Style) -> Vec<Vec<String>> {
    let mut out = vec![cols.iter().map(|c| st.dim(&c.title)).collect::<Vec<_>>()];
    for r in rows {
        out.push(cols.iter().map(|c| c.value(r, st)).collect());
    }
    out
}

/// The same table as HTML (`<table id=ID>` with its caption): a header
/// per column (its long title where it has one), each value as the
/// terminal shows it without colour, numbers right-aligned, a size in
/// bytes exactly with the terminal's figure beside (`1048576 (1.0 MiB)`);
/// an empty cell is plain, whatever its column.
pub fn html<R: ?Sized>(id: &str, caption: &str, cols: &[&Column<R>], rows: &[&R]) -> String {
    use super::html::{self, Td};
    let plain = Style::plain();
    let headers: Vec<&str> = cols.iter().map(|c| c.long.unwrap_or(&c.title)).collect();
    let cells: Vec<Vec<Td>> = rows
        .iter()
        .map(|r| {
            cols.iter()
                .map(|c| {
                    let shown = c.value(r, &plain);
                    let raw = c.raw(r);
                    let v = if c.size && shown != raw && !raw.is_empty() {
                        format!("{raw} ({shown})")
                    } else {
                        shown
                    };
                    if let Some(class) = c.class.and_then(|f| f(r)) {
                        Td::Class(class, v)
                    } else if (c.numeric || c.size) && !v.is_empty() {
                        Td::num(v)
                    } else {
                        Td::text(v)
                    }
                })
                .collect()
        })
        .collect();
    html::table(id, caption, &headers, &cells)
}

/// The table in the form `st.table` asks for, each line after `indent`:
/// aligned under dimmed titles, raw (`-r`) or as pairs (`-P`).
pub fn render<R: ?Sized>(cols: &[&Column<R>], rows: &[&R], st: &Style, indent: &str) -> String {
    let form = st.table;
    // Raw and pairs are read by programs: never coloured.
    let plain = Style {
        color: false,
        ..st.clone()
    };
    let lines: Vec<String> = match form.mode {
        TableMode::Aligned => {
            let mut t = table_rows(cols, rows, st);
            if !form.headings {
                t.remove(0);
            }
            super::style::table(&t)
                .lines()
                .map(str::to_string)
                .collect()
        }
        TableMode::Raw => {
            let head = form
                .headings
                .then(|| cols.iter().map(|c| c.key()).collect::<Vec<_>>().join(" "));
            let body = rows.iter().map(|r| {
                let v: Vec<String> = cols
                    .iter()
                    .map(|c| raw_escape(&c.raw_value(r, &plain)))
                    .collect();
                v.join(" ")
            });
            head.into_iter().chain(body).collect()
        }
        TableMode::Pairs => rows
            .iter()
            .map(|r| {
                let v: Vec<String> = cols
                    .iter()
                    .map(|c| format!("{}=\"{}\"", c.key(), pair_escape(&c.raw_value(r, &plain))))
                    .collect();
                v.join(" ")
            })
            .collect(),
    };
    lines.iter().map(|l| format!("{indent}{l}\n")).collect()
}

/// `-r`: a value with no space in it, so the columns split on spaces.
/// Whitespace, control characters and the backslash become `\xNN`, one
/// per byte, as lsblk's raw mode writes them; other characters stay.
pub fn raw_escape(s: &str) -> String {
    escape(s, |c| c.is_whitespace() || c.is_control() || c == '\\')
}

/// `-P`: a value safe between double quotes, also for a shell's `eval`:
/// quotes, backslashes, `$`, backticks and control characters become
/// `\xNN`, as lsblk's pairs mode writes them.
pub fn pair_escape(s: &str) -> String {
    escape(s, |c| c.is_control() || matches!(c, '"' | '\\' | '$' | '`'))
}

fn escape(s: &str, odd: fn(char) -> bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if odd(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The columns left when the table must fit `width`: the highest drop
/// rank goes first, then the next. Returns what is kept and the titles
/// hidden.
pub fn fit<'c, R: ?Sized>(
    cols: Vec<&'c Column<R>>,
    rows: &[&R],
    st: &Style,
    width: usize,
) -> (Vec<&'c Column<R>>, Vec<&'c str>) {
    let mut kept = cols;
    let mut hidden = Vec::new();
    loop {
        let widths = super::style::column_widths(&table_rows(&kept, rows, st));
        let total: usize = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
        let worst = kept
            .iter()
            .enumerate()
            .filter(|(_, c)| c.drop > 0)
            .max_by_key(|(_, c)| c.drop)
            .map(|(i, _)| i);
        match worst {
            Some(i) if total > width => hidden.push(&*kept.remove(i).title),
            _ => return (kept, hidden),
        }
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV: the header (only with `headings`: `-n` leaves it out), then one
/// line per row, of the columns `-o` asked for (a human-only column brings
/// the CSV columns that are part of it).
pub fn csv_with<R: ?Sized>(
    cols: &[Column<R>],
    rows: &[&R],
    asked: Option<&[String]>,
    headings: bool,
) -> String {
    let mut picked: Vec<&Column<R>> = Vec::new();
    for p in select(cols, asked, |c| c.csv) {
        let parts = cols.iter().filter(|c| c.part_of == Some(&*p.id));
        for c in std::iter::once(p).filter(|p| p.csv).chain(parts) {
            if !picked.iter().any(|x| x.id == c.id) {
                picked.push(c);
            }
        }
    }
    let mut out = String::new();
    if headings {
        out = picked.iter().map(|c| &*c.id).collect::<Vec<_>>().join(",");
        out.push('\n');
    }
    for r in rows {
        let line: Vec<String> = picked.iter().map(|c| field(&c.raw(r))).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// lsblk's escapes: raw leaves no space in a value, pairs nothing a
    /// shell would expand between double quotes.
    #[test]
    fn raw_and_pair_values_are_escaped_as_lsblk_does() {
        assert_eq!(raw_escape("931.5 GiB"), "931.5\\x20GiB");
        assert_eq!(raw_escape("a\tb\\c\n"), "a\\x09b\\x5cc\\x0a");
        assert_eq!(raw_escape("é-ok"), "é-ok");
        assert_eq!(
            pair_escape("say \"hi\" $HOME `x`"),
            "say \\x22hi\\x22 \\x24HOME \\x60x\\x60"
        );
        assert_eq!(pair_escape("a b"), "a b");
        assert_eq!(pair_escape("\u{7f}"), "\\x7f");
    }

    /// The three forms of one table, with and without header, sizes in
    /// bytes or not.
    #[test]
    fn a_table_prints_in_lsblks_forms() {
        use crate::report::style::{TableForm, TableMode};
        type T = Column<(&'static str, u64)>;
        let cols = [
            T::both("name", "name", |r| r.0.to_string()),
            T::both("size_bytes", "size", |r| r.1.to_string())
                .shown_as(|r, _| crate::units::human(r.1))
                .size(),
        ];
        let picked: Vec<&T> = cols.iter().collect();
        let rows = [("a disk", 1u64 << 30), ("b", 512)];
        let rows: Vec<&(&str, u64)> = rows.iter().collect();
        let mut st = Style::plain();
        let form = |mode, headings, bytes| TableForm {
            mode,
            headings,
            bytes,
        };
        st.table = form(TableMode::Aligned, true, false);
        assert_eq!(
            render(&picked, &rows, &st, "  "),
            "  name    size\n  a disk  1 GiB\n  b       512 B\n"
        );
        st.table = form(TableMode::Aligned, false, true);
        assert_eq!(
            render(&picked, &rows, &st, ""),
            "a disk  1073741824\nb       512\n"
        );
        st.table = form(TableMode::Raw, true, false);
        assert_eq!(
            render(&picked, &rows, &st, ""),
            "NAME SIZE\na\\x20disk 1G\nb 512B\n"
        );
        st.table = form(TableMode::Pairs, true, true);
        st.color = true;
        assert_eq!(
            render(&picked, &rows, &st, ""),
            "NAME=\"a disk\" SIZE=\"1073741824\"\nNAME=\"b\" SIZE=\"512\"\n"
        );
        // The key is the title of the value shown, as lsblk's SIZE is,
        // and the value lsblk's form of it.
        st.table = form(TableMode::Pairs, true, false);
        assert_eq!(
            render(&picked, &rows[1..], &st, ""),
            "NAME=\"b\" SIZE=\"512B\"\n"
        );
    }

    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
