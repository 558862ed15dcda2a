//! A table of findings, as the HTML page lists them where it has no
//! fuller form of its own (watch's findings, what check will still report
//! after a plan): severity, code, what it is about, the sentence. And the
//! table of what a run could not read.

use crate::errors::TargetError;
use crate::findings::Finding;
use crate::report::columns::{html, Column};

type F = Column<Finding>;

pub fn findings() -> Vec<F> {
    vec![
        F::human_only("severity", "severity", |f| f.severity.as_str().into())
            .class(|f| Some(format!("sev-{}", f.severity))),
        F::human_only("code", "code", |f| f.code.as_str().into()),
        F::human_only("subject", "where", |f| f.subject.phrase()),
        F::human_only("message", "finding", |f| f.message.clone()),
    ]
}

type E = Column<TargetError>;

/// What a run could not read (its `errors`): the thing, named as `what`
/// (a target, a disk), and why, in the error's colour.
pub fn errors(what: &'static str) -> Vec<E> {
    vec![
        E::html_only("path", what, |e| e.path.clone()),
        E::html_only("message", "why", |e| e.message.clone()).class(|_| Some("sev-error".into())),
    ]
}

/// The page's table of what a run could not read, or nothing when
/// everything was.
pub fn errors_html(id: &str, caption: &str, what: &'static str, errors: &[TargetError]) -> String {
    if errors.is_empty() {
        return String::new();
    }
    let cols = self::errors(what);
    html(
        id,
        caption,
        &cols.iter().collect::<Vec<_>>(),
        &errors.iter().collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{Code, Subject};

    #[test]
    fn a_finding_row_names_where_it_is_and_colours_its_severity() {
        let mut f = Finding::new(Code::StraddlingIo, "1000 of 1000 writes straddle");
        f.subject = Subject {
            target: Some("sdb".into()),
            partition: Some(1),
            layer: None,
        };
        let cols = findings();
        let page = html(
            "w-findings",
            "Findings",
            &cols.iter().collect::<Vec<_>>(),
            &[&f],
        );
        assert!(
            page.contains(
                "<td class=\"sev-error\">error</td><td>straddling-io</td><td>sdb, partition 1</td>"
            ),
            "{page}"
        );
        assert!(page.contains("<th>where</th>"), "{page}");
    }
}
