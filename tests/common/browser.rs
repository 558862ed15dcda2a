//! Headless Chromium for the HTML report tests: a page rendered to a
//! screenshot (kept under target/screenshots/ to look at), its DOM after
//! parsing, and the network requests the page made.

use super::require_tool;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the browser made of a page.
pub struct Rendered {
    /// The DOM after parsing (`--dump-dom`).
    pub dom: String,
    /// The screenshot.
    pub png: PathBuf,
    /// Every request the page itself started (http, https, ws ...), from
    /// Chromium's net log: those whose network isolation key is the file's.
    pub requests: Vec<String>,
}

/// Where the screenshots go: target/screenshots/.
pub fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The flags that keep Chromium from talking to anyone on its own, so
/// the net log holds only what the page asks for.
fn chromium(profile: &Path) -> Command {
    require_tool("chromium");
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

fn run(mut c: Command, what: &str) -> String {
    let out = c.output().expect("run chromium");
    assert!(
        out.status.success(),
        "chromium {what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The URLs of the requests a `file://` page started, from a net log.
pub fn page_requests(net_log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(net_log).expect("net log written");
    // Chromium may leave the log unterminated when it exits fast.
    let v: serde_json::Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .expect("net log is JSON");
    let mut urls: Vec<String> = v["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let p = &e["params"];
            let key = p["network_isolation_key"].as_str()?;
            key.starts_with("file://")
                .then(|| p["url"].as_str().map(str::to_string))?
        })
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

/// Renders `page` (an HTML file): its DOM with the requests it made, and a
/// `width` × `height` screenshot saved as target/screenshots/`name`.png.
pub fn render(page: &Path, name: &str, width: u32, height: u32) -> Rendered {
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let net_log = profile.path().join("net.json");
    let mut dump = chromium(profile.path());
    dump.arg(format!("--log-net-log={}", net_log.display()))
        .args(["--virtual-time-budget=2000", "--dump-dom", &url]);
    let dom = run(dump, "--dump-dom");
    let requests = page_requests(&net_log);
    let png = screenshot_dir().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&png);
    let mut shot = chromium(profile.path());
    shot.arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(&url);
    run(shot, "--screenshot");
    assert!(png.is_file(), "no screenshot at {}", png.display());
    Rendered { dom, png, requests }
}

/// The share of pixels that are not the background (the top-left
/// pixel's colour), and how many distinct colours the image has.
pub fn ink(png: &Path) -> (f64, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    let background = pixels[0];
    let inked = pixels.iter().filter(|p| **p != background).count();
    let mut colours: Vec<&[u8]> = pixels.clone();
    colours.sort_unstable();
    colours.dedup();
    (inked as f64 / pixels.len() as f64, colours.len())
}

/// Fails unless the screenshot shows something: more than `min_ink` of
/// its pixels off the background and more than a few colours.
pub fn assert_not_blank(r: &Rendered, min_ink: f64) {
    let (share, colours) = ink(&r.png);
    assert!(
        share > min_ink && colours > 16,
        "{} looks blank: {:.2}% inked, {colours} colours",
        r.png.display(),
        share * 100.0
    );
}

/// Fails when the page fetched anything (the net log), or names anything
/// it could fetch: no `src`, `href`, `url(`, `@import`, `<link`,
/// `<iframe`, `<object` or `<embed` in the DOM. The SVG namespace
/// (`xmlns`) is a name, not a request, and `url(#ramp)` points inside the
/// page (a gradient), so those two are allowed.
pub fn assert_self_contained(r: &Rendered) {
    assert!(
        r.requests.is_empty(),
        "the page made requests: {:?}",
        r.requests
    );
    let dom = r.dom.to_ascii_lowercase().replace("url(#", "fragment(#");
    for bad in [
        " src=",
        " href=",
        "url(",
        "@import",
        "<link",
        "<iframe",
        "<object",
        "<embed",
        "<script src",
    ] {
        assert!(!dom.contains(bad), "the page names a resource ({bad})");
    }
}

/// How many times `needle` occurs in the DOM.
pub fn count(dom: &str, needle: &str) -> usize {
    dom.matches(needle).count()
}

/// The markup of the figure `id` (its `<svg>` element), or a failure.
pub fn figure<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom
        .find(&format!(" id=\"{id}\""))
        .unwrap_or_else(|| panic!("no figure {id}"));
    let open = dom[..start].rfind("<svg").expect("the figure is an svg");
    let len = dom[open..].find("</svg>").expect("the svg ends");
    &dom[open..open + len]
}
