//! A plan for an image container (qcow2, VMDK, VHDX, VDI, VHD): the same
//! layout as for the raw guest disk, but no script. The script moves
//! bytes of a raw disk or image with dd and rewrites its table with
//! sfdisk; run on a container file it would write over the container's
//! own metadata. So the fix goes through a raw copy, made and turned back
//! by `qemu-img`, the tool that made the image.

use super::{DiskPlan, Manual};
use crate::image::{Container, ContainerFormat};
use crate::names::shell_word;

/// Why `--script` writes nothing for a container, in one line.
pub fn script_refusal(path: &str, c: &Container) -> String {
    format!(
        "{path} is a {} image: the script moves the bytes of a raw disk and would write over the container's metadata; convert it to raw with qemu-img first (the steps under \"by hand\")",
        c.format
    )
}

/// Why `plan --new --script` writes nothing for a container, and how its
/// guest disk is laid out instead: on a raw copy, converted back.
pub fn new_disk_refusal(path: &str, c: &Container) -> String {
    let raw = shell_word(&raw_copy(path));
    format!(
        "{path} is a {} image: the script would write the table with sfdisk into the container file, not into its guest disk; lay out a raw copy of it (qemu-img convert -p -f {f} -O raw {p} {raw}, then diskalign plan --new {raw} with the same --sizes) and convert that back (qemu-img convert -p -O {f}{o} {raw} {back})",
        c.format,
        f = qemu_format(c.format),
        o = qemu_options(c),
        p = shell_word(path),
        back = shell_word(&format!("{path}.aligned")),
    )
}

/// The raw copy of the container at `path` that the steps make, as they
/// name it (next to it, from the directory they run in).
pub fn raw_copy(path: &str) -> String {
    format!("{path}.raw")
}

/// The steps by hand: convert to raw, plan and script that (`replan`:
/// when the layout changes, or may once a note's command has run on the
/// copy), run what the copy needs after its script (`after_script`: a
/// boot sector's hidden sectors, a filesystem's stripe hints), convert
/// back, check; `again` are the options the plan was made with
/// (`--topology`), which the plan and check of the copy take too.
pub fn manual(
    p: &DiskPlan,
    c: &Container,
    after_script: &[String],
    again: &str,
    replan: bool,
) -> Manual {
    let raw = raw_copy(&p.path);
    let back = format!("{}.aligned", p.path);
    let mut why = format!(
        "{} is a {} image: fix a raw copy of its guest disk, then convert that back",
        p.path, c.format
    );
    if !c.backing.is_empty() {
        why.push_str(" (the copy flattens the backing chain: the new image has no backing file)");
    }
    if !after_script.is_empty() {
        why.push_str("; after its script the copy gets what a moved boot sector needs (the note below says why)");
    }
    Manual {
        partition: None,
        about: None,
        clears: false,
        why,
        commands: vec![
            // -f: qemu probes a fixed VHD as raw (its footer is at the
            // end only; `vpc_probe` in qemu's block/vpc.c looks at byte 0).
            format!(
                "qemu-img convert -p -f {} -O raw {} {}",
                qemu_format(c.format),
                shell_word(&p.path),
                shell_word(&raw)
            ),
        ]
        .into_iter()
        .chain(
            replan
                .then(|| {
                    [
                        format!("diskalign plan {}{again} --script fix.sh", shell_word(&raw)),
                        "sh fix.sh".into(),
                    ]
                })
                .into_iter()
                .flatten(),
        )
        .chain(after_script.iter().cloned())
        .chain([
            format!(
                "qemu-img convert -p -O {}{} {} {}",
                qemu_format(c.format),
                qemu_options(c),
                shell_word(&raw),
                shell_word(&back)
            ),
            format!("diskalign check {}{again}", shell_word(&back)),
        ])
        .collect(),
    }
}

/// qemu's name of the format (`vpc` is its VHD).
fn qemu_format(f: ContainerFormat) -> &'static str {
    match f {
        ContainerFormat::Vhd => "vpc",
        other => other.as_str(),
    }
}

/// The options that make the new image like the old one: its unit, its
/// subformat.
fn qemu_options(c: &Container) -> String {
    let mut o = Vec::new();
    match c.format {
        ContainerFormat::Qcow2 => {
            o.extend(c.unit_bytes.map(|u| format!("cluster_size={u}")));
            if c.subunit_bytes.is_some() {
                o.push("extended_l2=on".into());
            }
        }
        ContainerFormat::Vhdx => o.extend(c.unit_bytes.map(|u| format!("block_size={u}"))),
        ContainerFormat::Vmdk | ContainerFormat::Vhd => {
            o.extend(c.subformat.as_ref().map(|s| format!("subformat={s}")))
        }
        ContainerFormat::Vdi if c.subformat.as_deref() == Some("fixed") => {
            o.push("static=on".into())
        }
        _ => {}
    }
    if o.is_empty() {
        String::new()
    } else {
        format!(" -o {}", o.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_comes_back_in_the_same_format_and_unit() {
        let c = Container {
            format: ContainerFormat::Qcow2,
            unit_bytes: Some(65536),
            ..Container::default()
        };
        assert_eq!(qemu_options(&c), " -o cluster_size=65536");
        let v = Container {
            format: ContainerFormat::Vhd,
            subformat: Some("dynamic".into()),
            ..Container::default()
        };
        assert_eq!(qemu_format(v.format), "vpc");
        assert_eq!(qemu_options(&v), " -o subformat=dynamic");
        assert_eq!(
            qemu_options(&Container {
                format: ContainerFormat::Vdi,
                ..Container::default()
            }),
            ""
        );
    }
}
