//! A small parser for `strace -o LOG` output (with or without `-f`, with
//! `-y`): one [`Call`] per completed system call, `<unfinished ...>` and
//! `<... resumed>` halves joined per pid, signal and exit lines dropped.
//! Its own test is in tests/crash.rs (`strace_parser_...`).

use std::collections::HashMap;

/// One system call as strace printed it.
#[derive(Debug, Clone)]
pub struct Call {
    /// 1-based line of the log where the call ended.
    pub line: usize,
    /// The tracee (0 when the log has no pid column: strace without `-f`).
    pub pid: u32,
    pub name: String,
    /// The top-level arguments, as printed.
    pub args: Vec<String>,
    /// What follows ` = `: `0`, `6</path>`, `-1 ENOENT (...)`, `?`.
    pub ret: String,
}

impl Call {
    /// The call returned (it was not killed on entry) and did not fail.
    pub fn ok(&self) -> bool {
        !self.ret.is_empty() && !self.ret.starts_with('-') && !self.ret.starts_with('?')
    }

    pub fn arg(&self, i: usize) -> &str {
        self.args.get(i).map(String::as_str).unwrap_or("")
    }

    /// The path `-y` printed for the fd argument `i` (`4</a/b>` -> `/a/b`).
    pub fn fd_path(&self, i: usize) -> Option<String> {
        fd_path(self.arg(i))
    }

    /// A string argument, unescaped.
    pub fn str_arg(&self, i: usize) -> Option<String> {
        unquote(self.arg(i))
    }

    /// `dirfd, "name"` resolved as the kernel would (absolute names win).
    pub fn at_path(&self, dirfd: usize, name: usize) -> Option<String> {
        let n = self.str_arg(name)?;
        if n.starts_with('/') {
            return Some(n);
        }
        let d = self.fd_path(dirfd)?;
        if n == "." || n.is_empty() {
            return Some(d);
        }
        Some(format!("{}/{}", d.trim_end_matches('/'), n))
    }

    /// The path `-y` printed for a returned fd (`= 6</a/b>`).
    pub fn ret_path(&self) -> Option<String> {
        fd_path(self.ret.split_whitespace().next().unwrap_or(""))
    }

    /// The flags argument split on `|`.
    pub fn flags(&self, i: usize) -> Vec<String> {
        self.arg(i)
            .split('|')
            .map(|s| s.trim().to_string())
            .collect()
    }

    pub fn has_flag(&self, i: usize, flag: &str) -> bool {
        self.flags(i).iter().any(|f| f == flag)
    }
}

/// `4</a/b>` or `AT_FDCWD</a>` -> `/a/b`; None for anything else.
pub fn fd_path(arg: &str) -> Option<String> {
    let open = arg.find('<')?;
    let inner = arg[open + 1..].strip_suffix('>')?;
    if inner.starts_with('/') {
        Some(inner.to_string())
    } else {
        None
    }
}

/// `"a\"b"` -> `a"b` (C escapes as strace prints them); None if not a string.
pub fn unquote(arg: &str) -> Option<String> {
    let s = arg.strip_prefix('"')?;
    let s = s.strip_suffix("\"...").or_else(|| s.strip_suffix('"'))?;
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            i += 1;
            match b[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'v' => out.push(0x0b),
                b'f' => out.push(0x0c),
                b'x' if i + 2 < b.len() => {
                    let h = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("3f");
                    out.push(u8::from_str_radix(h, 16).unwrap_or(b'?'));
                    i += 2;
                }
                d @ b'0'..=b'7' => {
                    let mut v = (d - b'0') as u32;
                    let mut n = 1;
                    while n < 3 && i + 1 < b.len() && (b'0'..=b'7').contains(&b[i + 1]) {
                        i += 1;
                        v = v * 8 + (b[i] - b'0') as u32;
                        n += 1;
                    }
                    out.push(v as u8);
                }
                c => out.push(c),
            }
        } else {
            out.push(b[i]);
        }
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Split `name(args) = ret`. None for lines that are not a whole call.
fn split_call(text: &str) -> Option<(String, Vec<String>, String)> {
    let open = text.find('(')?;
    let name = &text[..open];
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return None;
    }
    let b = text.as_bytes();
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut i = open + 1;
    let mut close = None;
    while i < b.len() {
        let c = b[i] as char;
        if in_str {
            cur.push(c);
            if c == '\\' && i + 1 < b.len() {
                cur.push(b[i + 1] as char);
                i += 2;
                continue;
            }
            if c == '"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                cur.push(c);
            }
            '(' | '[' | '{' | '<' => {
                depth += 1;
                cur.push(c);
            }
            ']' | '}' | '>' => {
                if depth > 0 {
                    depth -= 1;
                }
                cur.push(c);
            }
            ')' if depth == 0 => {
                close = Some(i);
                break;
            }
            ')' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => {
                args.push(cur.trim().to_string());
                cur.clear();
            }
            _ => cur.push(c),
        }
        i += 1;
    }
    let close = close?;
    if !cur.trim().is_empty() || !args.is_empty() {
        args.push(cur.trim().to_string());
    }
    // Multi-byte UTF-8 in strings was pushed byte by byte above; strace
    // escapes non-ASCII bytes, so the arguments are ASCII in practice.
    let rest = &text[close + 1..];
    let ret = rest
        .trim_start()
        .strip_prefix('=')
        .map(|r| r.trim().to_string())
        .unwrap_or_default();
    Some((name.to_string(), args, ret))
}

/// Parse a whole log.
pub fn parse(log: &str) -> Vec<Call> {
    let mut calls = Vec::new();
    let mut pending: HashMap<u32, String> = HashMap::new();
    for (n, raw) in log.lines().enumerate() {
        let (pid, text) = match raw.split_once(' ') {
            Some((p, rest)) if !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()) => {
                (p.parse::<u32>().unwrap_or(0), rest.trim_start())
            }
            _ => (0, raw),
        };
        if text.starts_with("---") || text.starts_with("+++") {
            continue;
        }
        let joined = if let Some(rest) = text.strip_prefix("<... ") {
            let Some((_, after)) = rest.split_once(" resumed>") else {
                continue;
            };
            match pending.remove(&pid) {
                Some(head) => format!("{head}{after}"),
                None => continue,
            }
        } else if let Some(head) = text.strip_suffix(" <unfinished ...>") {
            pending.insert(pid, head.to_string());
            continue;
        } else {
            text.to_string()
        };
        if let Some((name, args, ret)) = split_call(&joined) {
            calls.push(Call {
                line: n + 1,
                pid,
                name,
                args,
                ret,
            });
        }
    }
    // A call cut short by the end of the log (the tracee was killed on entry).
    for (pid, head) in pending {
        if let Some((name, args, _)) = split_call(&format!("{head}) = ?")) {
            calls.push(Call {
                line: usize::MAX,
                pid,
                name,
                args,
                ret: "?".into(),
            });
        }
    }
    calls
}

/// The runbook's own calls in a `-f` log: the first pid (the traced
/// program) and its threads, without any process that exec'd a tool.
pub fn own_calls(calls: &[Call]) -> Vec<Call> {
    let Some(main) = calls.first().map(|c| c.pid) else {
        return Vec::new();
    };
    let exec: std::collections::HashSet<u32> = calls
        .iter()
        .filter(|c| c.name == "execve" && c.pid != main)
        .map(|c| c.pid)
        .collect();
    calls
        .iter()
        .filter(|c| !exec.contains(&c.pid))
        .cloned()
        .collect()
}
