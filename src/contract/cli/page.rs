//! How a help page is laid out: the full page (clap's long help at
//! [`HELP_WIDTH`] columns) and one mode's page, whose texts are those of
//! the flags on [`Cli`].

use super::grammar::{Cli, HELP_WIDTH, USAGE};

/// `--help` (and `-h`): clap's long help, wrapped to [`HELP_WIDTH`] columns
/// at spaces (clap's own wrapping needs its `wrap_help` feature, which asks
/// the terminal; this one is the same everywhere).
pub fn help() -> String {
    use clap::CommandFactory;
    let raw = Cli::command().render_long_help().to_string();
    let trimmed: Vec<&str> = raw.lines().map(str::trim_end).collect();
    crate::contract::screen::fit_keeping_indent(&trimmed.join("\n"), HELP_WIDTH)
}
/// What one mode's page says besides clap's own texts: which of clap's
/// arguments it shows, its examples and its exit codes. The options' texts
/// are their doc comments on [`Cli`], never copied here.
pub(super) struct ModePage {
    /// A word only the mode's entry of [`USAGE`] has.
    pub(super) usage: &'static str,
    /// The mode's options (clap ids), each with its doc comment.
    pub(super) options: &'static [&'static str],
    /// The global options the mode uses (clap ids), named only.
    pub(super) globals: &'static [&'static str],
    /// An operator's examples first, then the controller's.
    pub(super) examples: &'static str,
    /// The exit codes the mode can return, in two lines at most.
    pub(super) exit_codes: &'static str,
}

/// The global options every mode accepts (whether or not it uses them):
/// a page names those its mode does not use as "also accepted".
pub(super) const GLOBAL_IDS: &[&str] = &[
    "root",
    "output",
    "log_format",
    "threshold_days",
    "wide",
    "lock_timeout",
    "stop_timeout",
    "health_timeout",
    "command_timeout",
    "probe_timeout",
    "settle",
    "kubeadm",
    "crictl",
    "kubeadm_config",
    "runtime_endpoint",
];
/// One clap argument, by id (a page names only arguments that exist: a
/// unit test renders every page).
pub(super) fn arg(cmd: &clap::Command, id: &str) -> clap::Arg {
    cmd.get_arguments()
        .find(|a| a.get_id() == id)
        .unwrap_or_else(|| panic!("no argument {id}"))
        .clone()
}

/// `--name`, and its value as `--help` shows it (`<PATH>`), or as the
/// usage lines do (`PATH`, `text|json`) when `brief`.
fn arg_spec(a: &clap::Arg, brief: bool) -> String {
    let long = format!("--{}", a.get_long().unwrap_or_default());
    if !a.get_action().takes_values() {
        return long;
    }
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    let name = a
        .get_value_names()
        .and_then(|n| n.first())
        .map_or_else(|| a.get_id().as_str().to_uppercase(), |n| n.to_string());
    match (brief, values.is_empty()) {
        (true, false) => format!("{long} {}", values.join("|")),
        (true, true) => format!("{long} {name}"),
        (false, _) => format!("{long} <{name}>"),
    }
}

/// An argument's text: its doc comment, with its values and default when
/// clap keeps them apart (`--receipts`).
fn arg_text(a: &clap::Arg) -> String {
    let mut text = a.get_help().map(ToString::to_string).unwrap_or_default();
    let possible = a.get_possible_values();
    let values: Vec<&str> = possible
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name())
        .collect();
    if a.get_action().takes_values() && !values.is_empty() {
        text.push_str(&format!(": {}", values.join(", ")));
    }
    if let Some(d) = a.get_default_values().first() {
        if a.get_action().takes_values() && !text.contains("[default:") {
            text.push_str(&format!(" [default: {}]", d.to_string_lossy()));
        }
    }
    text
}

/// `words` joined by `sep`, wrapped at [`HELP_WIDTH`]: the first line
/// after `first`, the others indented by `indent`.
fn wrap_words(first: &str, words: &[String], sep: &str, indent: usize) -> Vec<String> {
    let mut lines = vec![first.to_string()];
    for (k, w) in words.iter().enumerate() {
        let piece = if k + 1 < words.len() {
            format!("{w}{sep}")
        } else {
            w.clone()
        };
        let cur = lines.last_mut().expect("one line at least");
        // Where the line is only its indent, the word starts there.
        let blank = cur.trim().is_empty();
        let gap = usize::from(!blank && !cur.ends_with(' '));
        if blank || cur.chars().count() + gap + piece.chars().count() <= HELP_WIDTH {
            cur.push_str(&" ".repeat(gap));
            cur.push_str(&piece);
        } else {
            lines.push(format!("{}{piece}", " ".repeat(indent)));
        }
    }
    lines
}

/// The column an option's text starts at on a mode's page.
const OPTION_COLUMN: usize = 24;
/// One mode's page: its usage, its options with their texts, the global
/// options it uses (named), examples (an operator's first), its exit codes
/// and where the full page is; under 40 lines of [`HELP_WIDTH`] columns (a
/// unit test holds every page to it).
pub(super) fn mode_page(p: &ModePage) -> String {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let mut out: Vec<String> = Vec::new();
    // The mode's entry of the usage lines: its first line and those
    // continuing it.
    let mut entries: Vec<Vec<&str>> = Vec::new();
    for line in USAGE.lines() {
        if line.trim_start().starts_with("nvke-cert-runbook") {
            entries.push(vec![line.trim_start()]);
        } else if let Some(e) = entries.last_mut() {
            e.push(line);
        }
    }
    // Every entry of the mode (the status page: the view and the fence).
    let mine: Vec<&Vec<&str>> = entries
        .iter()
        .filter(|e| e.join(" ").contains(p.usage))
        .collect();
    assert!(!mine.is_empty(), "no usage line has {}", p.usage);
    for (i, entry) in mine.iter().enumerate() {
        let lead = if i == 0 { "Usage: " } else { "       " };
        out.push(format!("{lead}{}", entry[0]));
        out.extend(entry[1..].iter().map(|l| l.to_string()));
    }
    out.push(String::new());
    out.push("Options:".into());
    for id in p.options {
        let a = arg(&cmd, id);
        let spec = format!("  {}", arg_spec(&a, false));
        let words: Vec<String> = arg_text(&a)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let first = if spec.chars().count() + 2 <= OPTION_COLUMN {
            format!("{spec:<OPTION_COLUMN$}")
        } else {
            out.push(spec);
            " ".repeat(OPTION_COLUMN)
        };
        out.extend(wrap_words(&first, &words, "", OPTION_COLUMN));
    }
    let brief = |ids: Vec<&str>| -> Vec<String> {
        ids.into_iter()
            .map(|id| arg_spec(&arg(&cmd, id), true))
            .collect()
    };
    let used = brief(
        p.globals
            .iter()
            .copied()
            .filter(|id| !p.options.contains(id))
            .collect(),
    );
    out.extend(wrap_words("Global options used:", &used, ",", 2));
    let others = brief(
        GLOBAL_IDS
            .iter()
            .copied()
            .filter(|id| !p.options.contains(id) && !p.globals.contains(id))
            .collect(),
    );
    if !others.is_empty() {
        out.extend(wrap_words("Also accepted (see --help):", &others, ",", 2));
    }
    out.push(String::new());
    out.extend(p.examples.lines().map(str::to_string));
    out.push(String::new());
    out.extend(p.exit_codes.lines().map(str::to_string));
    out.push("Every option, the files and all exit codes: nvke-cert-runbook --help".into());
    out.join("\n") + "\n"
}
