//! A small backtracking regular expression matcher for `crictl ps --name`
//! (Go's regexp.MatchString: unanchored search). Supports literals, `.`,
//! classes `[a-z]` / `[^...]`, `\d \w \s` and escaped metacharacters, `^`,
//! `$`, groups `( )` / `(?: )` with `|`, and the quantifiers `* + ? {n} {n,}
//! {n,m}` (greedy).

use anyhow::{bail, Result};

#[derive(Debug, Clone)]
enum Node {
    Char(char),
    Any,
    Class(Vec<(char, char)>, bool),
    Start,
    End,
    Group(Vec<Vec<Node>>),
    Repeat(Box<Node>, usize, usize),
}

pub struct Regex {
    alts: Vec<Vec<Node>>,
}

impl Regex {
    pub fn new(pattern: &str) -> Result<Regex> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut p = Parser { s: &chars, i: 0 };
        let alts = p.alternation()?;
        if p.i != chars.len() {
            bail!("error parsing regexp: unexpected ) in `{pattern}`");
        }
        Ok(Regex { alts })
    }

    pub fn is_match(&self, text: &str) -> bool {
        let t: Vec<char> = text.chars().collect();
        let group = [Node::Group(self.alts.clone())];
        (0..=t.len()).any(|start| matches(&group, &t, start, &|_| true))
    }
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn alternation(&mut self) -> Result<Vec<Vec<Node>>> {
        let mut alts = vec![self.sequence()?];
        while self.peek() == Some('|') {
            self.i += 1;
            alts.push(self.sequence()?);
        }
        Ok(alts)
    }

    fn sequence(&mut self) -> Result<Vec<Node>> {
        let mut seq = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let atom = self.quantifier(atom)?;
            seq.push(atom);
        }
        Ok(seq)
    }

    fn atom(&mut self) -> Result<Node> {
        let c = self.s[self.i];
        self.i += 1;
        Ok(match c {
            '.' => Node::Any,
            '^' => Node::Start,
            '$' => Node::End,
            '(' => {
                if self.s[self.i..].starts_with(&['?', ':']) {
                    self.i += 2;
                }
                let alts = self.alternation()?;
                if self.peek() != Some(')') {
                    bail!("error parsing regexp: missing closing )");
                }
                self.i += 1;
                Node::Group(alts)
            }
            '[' => self.class()?,
            '\\' => self.escape()?,
            '*' | '+' | '?' => {
                bail!("error parsing regexp: missing argument to repetition operator: `{c}`")
            }
            c => Node::Char(c),
        })
    }

    fn escape(&mut self) -> Result<Node> {
        let Some(c) = self.peek() else {
            bail!("error parsing regexp: trailing backslash at end of expression");
        };
        self.i += 1;
        Ok(match c {
            'd' => Node::Class(vec![('0', '9')], false),
            'D' => Node::Class(vec![('0', '9')], true),
            'w' => Node::Class(word(), false),
            'W' => Node::Class(word(), true),
            's' => Node::Class(space(), false),
            'S' => Node::Class(space(), true),
            'n' => Node::Char('\n'),
            't' => Node::Char('\t'),
            c if c.is_ascii_alphanumeric() => {
                bail!("error parsing regexp: invalid escape sequence: `\\{c}`")
            }
            c => Node::Char(c),
        })
    }

    fn class(&mut self) -> Result<Node> {
        let mut negated = false;
        if self.peek() == Some('^') {
            negated = true;
            self.i += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                bail!("error parsing regexp: missing closing ]");
            };
            self.i += 1;
            if c == ']' && !first {
                break;
            }
            first = false;
            let lo = if c == '\\' {
                let Some(e) = self.peek() else {
                    bail!("error parsing regexp: missing closing ]");
                };
                self.i += 1;
                match e {
                    'd' => {
                        ranges.push(('0', '9'));
                        continue;
                    }
                    'w' => {
                        ranges.extend(word());
                        continue;
                    }
                    's' => {
                        ranges.extend(space());
                        continue;
                    }
                    e => e,
                }
            } else {
                c
            };
            if self.peek() == Some('-') && self.s.get(self.i + 1).is_some_and(|&n| n != ']') {
                let hi = self.s[self.i + 1];
                self.i += 2;
                if hi < lo {
                    bail!("error parsing regexp: invalid character class range");
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Ok(Node::Class(ranges, negated))
    }

    fn quantifier(&mut self, atom: Node) -> Result<Node> {
        let (min, max) = match self.peek() {
            Some('*') => (0, usize::MAX),
            Some('+') => (1, usize::MAX),
            Some('?') => (0, 1),
            Some('{') => {
                let rest: String = self.s[self.i..].iter().collect();
                let Some(end) = rest.find('}') else {
                    return Ok(atom);
                };
                let body = &rest[1..end];
                let parsed = match body.split_once(',') {
                    None => body.parse().ok().map(|n| (n, n)),
                    Some((a, "")) => a.parse().ok().map(|n| (n, usize::MAX)),
                    Some((a, b)) => a.parse().ok().zip(b.parse().ok()),
                };
                let Some((min, max)) = parsed else {
                    return Ok(atom);
                };
                self.i += end;
                (min, max)
            }
            _ => return Ok(atom),
        };
        self.i += 1;
        if matches!(atom, Node::Start | Node::End) {
            return Ok(atom);
        }
        Ok(Node::Repeat(Box::new(atom), min, max))
    }
}

fn word() -> Vec<(char, char)> {
    vec![('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')]
}

fn space() -> Vec<(char, char)> {
    vec![
        (' ', ' '),
        ('\t', '\t'),
        ('\n', '\n'),
        ('\r', '\r'),
        ('\x0c', '\x0c'),
    ]
}

fn one(node: &Node, c: char) -> bool {
    match node {
        Node::Char(x) => *x == c,
        Node::Any => c != '\n',
        Node::Class(ranges, neg) => ranges.iter().any(|(lo, hi)| *lo <= c && c <= *hi) != *neg,
        _ => false,
    }
}

fn matches(nodes: &[Node], t: &[char], pos: usize, k: &dyn Fn(usize) -> bool) -> bool {
    let Some((first, rest)) = nodes.split_first() else {
        return k(pos);
    };
    match first {
        Node::Start => pos == 0 && matches(rest, t, pos, k),
        Node::End => pos == t.len() && matches(rest, t, pos, k),
        Node::Group(alts) => alts
            .iter()
            .any(|alt| matches(alt, t, pos, &|p| matches(rest, t, p, k))),
        Node::Repeat(node, min, max) => repeat(node, *min, *max, 0, rest, t, pos, k),
        single => pos < t.len() && one(single, t[pos]) && matches(rest, t, pos + 1, k),
    }
}

#[allow(clippy::too_many_arguments)]
fn repeat(
    node: &Node,
    min: usize,
    max: usize,
    count: usize,
    rest: &[Node],
    t: &[char],
    pos: usize,
    k: &dyn Fn(usize) -> bool,
) -> bool {
    if count < max
        && matches(std::slice::from_ref(node), t, pos, &|p| {
            p != pos && repeat(node, min, max, count + 1, rest, t, p, k)
        })
    {
        return true;
    }
    count >= min && matches(rest, t, pos, k)
}

#[cfg(test)]
mod tests {
    use super::Regex;

    #[test]
    fn go_like_search() {
        let m = |p: &str, t: &str| Regex::new(p).unwrap().is_match(t);
        assert!(m("etcd", "etcd"));
        assert!(m("tcd", "etcd"));
        assert!(!m("^tcd", "etcd"));
        assert!(m("^kube-(apiserver|scheduler)$", "kube-scheduler"));
        assert!(!m(
            "^kube-(apiserver|scheduler)$",
            "kube-controller-manager"
        ));
        assert!(m("^k[a-z]+-v.p$", "kube-vip"));
        assert!(m("a{2,3}", "caaat"));
        assert!(!m("^a{2}$", "aaa"));
        assert!(m("\\.", "a.b"));
        assert!(!m("\\.", "ab"));
        assert!(m("", "anything"));
        assert!(Regex::new("(").is_err());
        assert!(Regex::new("*a").is_err());
    }
}
