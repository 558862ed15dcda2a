//! A table of findings, as the HTML page lists them where it has no
//! fuller form of its own (watch's findings, what check will still report
//! after a plan): severity, code, what it is about, the sentence.

use super::*;
use crate::findings::Finding;

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
