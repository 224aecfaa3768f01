//! The documentation holds together (issue 28 item 4):
//!
//! - every screen of `docs/operator-guide.md` is its golden file: a marker
//!   line `<!-- golden: CASE -->` immediately followed by a fenced `text`
//!   block whose content is byte for byte `tests/golden/CASE/stdout`. The
//!   convention: the block's content is every line between the opening
//!   fence line and the closing one, each with its newline, so it ends
//!   with the golden's final newline and the closing fence comes right
//!   after its last line (a golden without a final newline, or with a
//!   line that is a fence, cannot be shown and fails). A mismatch names the
//!   case and the first line that differs; a case that does not exist is
//!   named too. `SNAPSHOTS=overwrite` (as in tests/golden.rs) rewrites the
//!   blocks from the goldens instead of failing (and inserts a missing
//!   block), then read `git diff docs`;
//! - README.md has fewer than 250 lines;
//! - every file of `docs/` is linked from README.md, and every relative
//!   link of README.md and `docs/*.md` points at a file that exists (and,
//!   for `#anchor` into a Markdown file, at one of its headings).
#![allow(clippy::disallowed_methods, clippy::print_stderr)]

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

const GUIDE: &str = "docs/operator-guide.md";
const FENCE_OPEN: &str = "```text";
const FENCE_CLOSE: &str = "```";
const README_MAX_LINES: usize = 250;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The case a line marks, if it is a marker.
fn marker(line: &str) -> Option<&str> {
    line.trim()
        .strip_prefix("<!-- golden:")?
        .strip_suffix("-->")
        .map(str::trim)
}

/// The golden's stdout, or why it cannot be a screen.
fn golden(case: &str) -> Result<String, String> {
    let rel = format!("tests/golden/{case}/stdout");
    let text = std::fs::read_to_string(repo().join(&rel)).map_err(|e| {
        format!("{GUIDE}: the screen <!-- golden: {case} --> names {rel}, which cannot be read ({e}): create the case, or remove the screen")
    })?;
    if !text.ends_with('\n') {
        return Err(format!(
            "{rel} does not end with a newline: it cannot be shown as a block"
        ));
    }
    if text
        .lines()
        .any(|l| l.trim_start().starts_with(FENCE_CLOSE))
    {
        return Err(format!(
            "{rel} has a line starting with ``` : it cannot be shown as a block"
        ));
    }
    Ok(text)
}

/// The first line where `shown` (the guide's block) and `want` (the
/// golden) differ, in words.
fn first_difference(shown: &str, want: &str, block_line: usize) -> String {
    let (s, w): (Vec<&str>, Vec<&str>) = (shown.lines().collect(), want.lines().collect());
    for i in 0..s.len().max(w.len()) {
        let (a, b) = (s.get(i), w.get(i));
        if a != b {
            let show =
                |l: Option<&&str>| l.map_or("(the block ends)".to_string(), |l| format!("{l:?}"));
            return format!(
                "first difference at line {} of the block ({GUIDE} line {}):\n  guide:  {}\n  golden: {}",
                i + 1,
                block_line + i,
                show(a),
                show(b)
            );
        }
    }
    "the lines agree; the final newline differs".to_string()
}

#[test]
fn operator_guide_screens_are_the_goldens() {
    let overwrite = std::env::var("SNAPSHOTS").as_deref() == Ok("overwrite");
    let text = read(GUIDE);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut errors = Vec::new();
    let mut screens = 0;
    let mut i = 0;
    while i < lines.len() {
        out.push_str(lines[i]);
        let Some(case) = marker(lines[i]) else {
            i += 1;
            continue;
        };
        screens += 1;
        let marker_line = i + 1;
        i += 1;
        // The block right after the marker: its content and where it ends.
        let block = if lines.get(i).map(|l| l.trim_end()) == Some(FENCE_OPEN) {
            let close = (i + 1..lines.len()).find(|&j| lines[j].trim_end() == FENCE_CLOSE);
            match close {
                Some(j) => Some((lines[i + 1..j].concat(), j + 1)),
                None => {
                    errors.push(format!(
                        "{case}: the block after line {marker_line} is never closed"
                    ));
                    None
                }
            }
        } else {
            None
        };
        let want = match golden(case) {
            Ok(w) => w,
            Err(e) => {
                errors.push(e);
                if let Some((_, next)) = block {
                    out.push_str(&lines[i..next].concat());
                    i = next;
                }
                continue;
            }
        };
        let fresh = format!("{FENCE_OPEN}\n{want}{FENCE_CLOSE}\n");
        match block {
            Some((shown, next)) => {
                if shown != want {
                    if !overwrite {
                        errors.push(format!(
                            "{case}: the screen under line {marker_line} is not tests/golden/{case}/stdout; {}",
                            first_difference(&shown, &want, marker_line + 2)
                        ));
                    }
                    out.push_str(&fresh);
                } else {
                    out.push_str(&lines[i..next].concat());
                }
                i = next;
            }
            None => {
                if !overwrite {
                    errors.push(format!(
                        "{case}: no ```text block right after the marker on line {marker_line}"
                    ));
                }
                out.push_str(&fresh);
            }
        }
    }
    assert!(screens > 0, "{GUIDE} has no <!-- golden: CASE --> screen");
    if overwrite && out != text {
        std::fs::write(repo().join(GUIDE), &out).unwrap();
        eprintln!("{GUIDE}: screens rewritten from the goldens; read `git diff docs`");
    }
    assert!(
        errors.is_empty(),
        "{} of {screens} screens of {GUIDE} disagree with their goldens (SNAPSHOTS=overwrite rewrites them):\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn readme_is_short() {
    let n = read("README.md").lines().count();
    assert!(
        n < README_MAX_LINES,
        "README.md has {n} lines; it must stay under {README_MAX_LINES} (the rest goes to docs/)"
    );
}

/// The Markdown links of a text outside fenced blocks and code spans.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut v = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans: what is between backticks is not a link.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                v.push((n + 1, rest[..end].trim().to_string()));
                rest = &rest[end..];
            }
        }
    }
    v
}

/// GitHub's anchor of a heading (ASCII headings: lower case, spaces to
/// hyphens, other punctuation dropped).
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut v = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            v.push(anchor(line.trim_start_matches('#')));
        }
    }
    v
}

/// `a/b/../c` without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn docs_are_linked_and_links_resolve() {
    let docs: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    let mut files = vec!["README.md".to_string()];
    files.extend(
        docs.iter()
            .filter(|d| d.ends_with(".md"))
            .map(|d| format!("docs/{d}")),
    );
    let mut errors = String::new();
    let mut from_readme = Vec::new();
    for file in &files {
        let text = read(file);
        let dir = Path::new(file).parent().unwrap_or(Path::new(""));
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, frag) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let rel = if path.is_empty() {
                PathBuf::from(file)
            } else {
                normalize(&dir.join(path))
            };
            if file == "README.md" {
                from_readme.push(rel.clone());
            }
            let full = repo().join(&rel);
            if !full.exists() {
                let _ = writeln!(
                    errors,
                    "{file}:{line}: ({target}) -> {} does not exist",
                    rel.display()
                );
                continue;
            }
            if let Some(f) = frag.filter(|_| rel.extension().is_some_and(|e| e == "md")) {
                let heads = anchors(&std::fs::read_to_string(&full).unwrap());
                if !heads.iter().any(|h| h == f) {
                    let _ = writeln!(
                        errors,
                        "{file}:{line}: ({target}): no heading of {} has the anchor #{f}",
                        rel.display()
                    );
                }
            }
        }
    }
    for d in &docs {
        let p = PathBuf::from("docs").join(d);
        if !from_readme.contains(&p) {
            let _ = writeln!(errors, "README.md does not link {}", p.display());
        }
    }
    assert!(errors.is_empty(), "documentation links:\n{errors}");
}
