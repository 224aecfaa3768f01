//! Comparing texts for people: a bounded unified line diff (two copies of
//! a manifest in a staging conflict) and the nearest names to a mistyped
//! one (an operation ID the node never saw).

/// A unified diff of `a` and `b` by lines (`---`/`+++` headers, `@@` hunks
/// with `context` lines around each change), at most `max_lines` lines of
/// output; a cut diff ends with a line that says how many were left out.
/// Empty when the texts are equal. Inputs over `MAX_DIFF_LINES` lines each
/// are not compared line by line (the caller still has the digests).
pub fn unified(a: &str, b: &str, label_a: &str, label_b: &str, max_lines: usize) -> Vec<String> {
    if a == b {
        return Vec::new();
    }
    let la: Vec<&str> = a.lines().collect();
    let lb: Vec<&str> = b.lines().collect();
    if la.len() > MAX_DIFF_LINES || lb.len() > MAX_DIFF_LINES {
        return vec![format!(
            "(not compared line by line: over {MAX_DIFF_LINES} lines)"
        )];
    }
    let ops = edit_script(&la, &lb);
    let mut out = vec![format!("--- {label_a}"), format!("+++ {label_b}")];
    for hunk in hunks(&ops, 3) {
        let (a0, b0) = (
            hunk.first().map(|o| o.a).unwrap_or(0),
            hunk.first().map(|o| o.b).unwrap_or(0),
        );
        let na = hunk.iter().filter(|o| o.kind != Kind::Insert).count();
        let nb = hunk.iter().filter(|o| o.kind != Kind::Delete).count();
        out.push(format!("@@ -{},{na} +{},{nb} @@", a0 + 1, b0 + 1));
        for o in hunk {
            out.push(match o.kind {
                Kind::Same => format!(" {}", la[o.a]),
                Kind::Delete => format!("-{}", la[o.a]),
                Kind::Insert => format!("+{}", lb[o.b]),
            });
        }
    }
    if out.len() > max_lines {
        let left = out.len() - max_lines + 1;
        out.truncate(max_lines - 1);
        out.push(format!("({left} more diff lines not shown)"));
    }
    out
}

/// Longest input the line diff compares (a kubeadm manifest is ~100 lines).
pub const MAX_DIFF_LINES: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Same,
    Delete,
    Insert,
}

/// One step of the edit script, at line `a` of the old text and `b` of
/// the new.
#[derive(Debug, Clone, Copy)]
struct Op {
    kind: Kind,
    a: usize,
    b: usize,
}

/// The edit script from a longest common subsequence table (quadratic in
/// lines, bounded by `MAX_DIFF_LINES`).
fn edit_script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    // lcs[i][j]: the LCS length of a[i..] and b[j..].
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] = if a[i] == b[j] {
                lcs[at(i + 1, j + 1)] + 1
            } else {
                lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::new();
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op {
                kind: Kind::Same,
                a: i,
                b: j,
            });
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[at(i + 1, j)] >= lcs[at(i, j + 1)]) {
            ops.push(Op {
                kind: Kind::Delete,
                a: i,
                b: j,
            });
            i += 1;
        } else {
            ops.push(Op {
                kind: Kind::Insert,
                a: i,
                b: j,
            });
            j += 1;
        }
    }
    ops
}

/// The changes with `context` unchanged lines around them, grouped.
fn hunks(ops: &[Op], context: usize) -> Vec<Vec<Op>> {
    let changed: Vec<usize> = (0..ops.len())
        .filter(|&k| ops[k].kind != Kind::Same)
        .collect();
    let mut out: Vec<Vec<Op>> = Vec::new();
    let mut range: Option<(usize, usize)> = None;
    for &k in &changed {
        let (lo, hi) = (k.saturating_sub(context), (k + context).min(ops.len() - 1));
        range = match range {
            Some((s, e)) if lo <= e + 1 => Some((s, hi.max(e))),
            Some((s, e)) => {
                out.push(ops[s..=e].to_vec());
                Some((lo, hi))
            }
            None => Some((lo, hi)),
        };
    }
    if let Some((s, e)) = range {
        out.push(ops[s..=e].to_vec());
    }
    out
}

/// The Levenshtein distance of two strings, by characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// Up to `n` of `known` nearest to `asked`, nearest first (ties by name),
/// and only those close enough to be a plausible typo: at most a third of
/// the asked name's length apart (at least 2 edits allowed).
pub fn nearest<'a>(asked: &str, known: impl IntoIterator<Item = &'a str>, n: usize) -> Vec<String> {
    let limit = (asked.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = known
        .into_iter()
        .filter(|k| *k != asked)
        .map(|k| (edit_distance(asked, k), k))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.dedup();
    scored
        .into_iter()
        .take(n)
        .map(|(_, k)| k.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff() {
        assert!(unified("a\nb\n", "a\nb\n", "x", "y", 40).is_empty());
    }

    #[test]
    fn a_changed_line_is_one_hunk_with_context() {
        let a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let b = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
        let d = unified(a, b, "active", "staged", 40);
        assert_eq!(
            d,
            vec![
                "--- active",
                "+++ staged",
                "@@ -2,7 +2,7 @@",
                " 2",
                " 3",
                " 4",
                "-5",
                "+FIVE",
                " 6",
                " 7",
                " 8"
            ]
        );
    }

    #[test]
    fn distant_changes_are_separate_hunks_and_inserts_count() {
        let a: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let mut b: Vec<String> = (1..=20)
            .filter(|i| *i != 19)
            .map(|i| i.to_string())
            .collect();
        b.insert(2, "new".into());
        let b: String = b.iter().map(|l| format!("{l}\n")).collect();
        let d = unified(&a, &b, "a", "b", 100);
        let headers: Vec<&String> = d.iter().filter(|l| l.starts_with("@@")).collect();
        assert_eq!(headers, ["@@ -1,5 +1,6 @@", "@@ -16,5 +17,4 @@"]);
        assert!(d.contains(&"+new".to_string()) && d.contains(&"-19".to_string()));
    }

    #[test]
    fn a_long_diff_is_cut_and_says_so() {
        let a: String = (0..100).map(|i| format!("a{i}\n")).collect();
        let b: String = (0..100).map(|i| format!("b{i}\n")).collect();
        let d = unified(&a, &b, "a", "b", 10);
        assert_eq!(d.len(), 10);
        assert_eq!(d[9], "(194 more diff lines not shown)");
    }

    #[test]
    fn nearest_names_are_close_typos_only() {
        let known = [
            "op-2026-11-30-a",
            "op-2026-11-30-b",
            "other",
            "op-2025-01-01-zz",
        ];
        assert_eq!(
            nearest("op-2026-11-30-c", known, 3),
            vec!["op-2026-11-30-a", "op-2026-11-30-b"]
        );
        assert!(nearest("completely-different-name", known, 3).is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
