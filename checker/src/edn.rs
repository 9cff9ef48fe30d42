//! A reader for the subset of EDN that Jepsen histories use: maps, vectors,
//! lists, sets, keywords, symbols, strings, characters, integers, floats,
//! `nil`, booleans, tagged values, comments and `#_` discards. Every value
//! keeps its line and column, so errors about what a value means can say
//! where it is.

use std::fmt;

/// Where a value starts: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// One EDN value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Char(char),
    Keyword(String),
    Symbol(String),
    Vector(Vec<Node>),
    List(Vec<Node>),
    Set(Vec<Node>),
    Map(Vec<(Node, Node)>),
    Tagged(String, Box<Node>),
}

/// A value and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) val: Val,
    pub(crate) pos: Pos,
}

impl Node {
    /// The value of `:key` in a map, if this is a map that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        let Val::Map(entries) = &self.val else {
            return None;
        };
        entries
            .iter()
            .find(|(k, _)| matches!(&k.val, Val::Keyword(s) if s == key))
            .map(|(_, v)| v)
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn seq(f: &mut fmt::Formatter<'_>, open: &str, xs: &[Node], close: &str) -> fmt::Result {
            f.write_str(open)?;
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{x}")?;
            }
            f.write_str(close)
        }
        match &self.val {
            Val::Nil => f.write_str("nil"),
            Val::Bool(b) => write!(f, "{b}"),
            Val::Int(i) => write!(f, "{i}"),
            Val::Float(x) => write!(f, "{x:?}"),
            Val::Str(s) => write!(f, "{s:?}"),
            Val::Char(c) => write!(f, "\\{c}"),
            Val::Keyword(k) => write!(f, ":{k}"),
            Val::Symbol(s) => f.write_str(s),
            Val::Vector(xs) => seq(f, "[", xs, "]"),
            Val::List(xs) => seq(f, "(", xs, ")"),
            Val::Set(xs) => seq(f, "#{", xs, "}"),
            Val::Map(kvs) => {
                f.write_str("{")?;
                for (i, (k, v)) in kvs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} {v}")?;
                }
                f.write_str("}")
            }
            Val::Tagged(t, v) => write!(f, "#{t} {v}"),
        }
    }
}

/// Why an EDN file could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdnError {
    /// What is wrong.
    pub message: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl fmt::Display for EdnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {} column {}",
            self.message, self.line, self.column
        )
    }
}

impl std::error::Error for EdnError {}

impl EdnError {
    pub(crate) fn at(pos: Pos, message: String) -> EdnError {
        EdnError {
            message,
            line: pos.line,
            column: pos.column,
        }
    }
}

/// Reads every top-level value of `text`.
pub(crate) fn parse_all(text: &str) -> Result<Vec<Node>, EdnError> {
    let mut r = Reader {
        s: text.as_bytes(),
        text,
        i: 0,
        line: 1,
        column: 1,
    };
    let mut out = Vec::new();
    loop {
        r.skip_ws()?;
        if r.i >= r.s.len() {
            return Ok(out);
        }
        out.push(r.value()?);
    }
}

struct Reader<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    line: usize,
    column: usize,
}

fn is_delim(b: u8) -> bool {
    b.is_ascii_whitespace()
        || matches!(
            b,
            b',' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b';'
        )
}

impl Reader<'_> {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }

    fn err<T>(&self, message: String) -> Result<T, EdnError> {
        Err(EdnError::at(self.pos(), message))
    }

    fn bump(&mut self) {
        let b = self.s[self.i];
        self.i += 1;
        if b == b'\n' {
            self.line += 1;
            self.column = 1;
        } else if b & 0xC0 != 0x80 {
            // Count characters, not UTF-8 continuation bytes.
            self.column += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) -> Result<(), EdnError> {
        while let Some(b) = self.peek() {
            if b.is_ascii_whitespace() || b == b',' {
                self.bump();
            } else if b == b';' {
                while self.peek().is_some_and(|b| b != b'\n') {
                    self.bump();
                }
            } else if b == b'#' && self.s.get(self.i + 1) == Some(&b'_') {
                self.bump();
                self.bump();
                self.skip_ws()?;
                if self.peek().is_none() {
                    return self.err("#_ discards nothing: the file ends".into());
                }
                self.value()?;
            } else {
                break;
            }
        }
        Ok(())
    }

    fn value(&mut self) -> Result<Node, EdnError> {
        let pos = self.pos();
        let Some(b) = self.peek() else {
            return self.err("expected a value, the file ends".into());
        };
        let val = match b {
            b'(' => Val::List(self.seq(b')')?),
            b'[' => Val::Vector(self.seq(b']')?),
            b'{' => {
                let xs = self.seq(b'}')?;
                if xs.len() % 2 == 1 {
                    return Err(EdnError::at(
                        pos,
                        "a map needs an even number of forms".into(),
                    ));
                }
                let mut it = xs.into_iter();
                let mut kvs = Vec::new();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    kvs.push((k, v));
                }
                Val::Map(kvs)
            }
            b')' | b']' | b'}' => return self.err(format!("unexpected {:?}", b as char)),
            b'"' => Val::Str(self.string()?),
            b'\\' => {
                self.bump();
                let tok = self.token();
                let mut cs = tok.chars();
                match (tok, cs.next(), cs.next()) {
                    ("newline", _, _) => Val::Char('\n'),
                    ("space", _, _) => Val::Char(' '),
                    ("tab", _, _) => Val::Char('\t'),
                    (_, Some(c), None) => Val::Char(c),
                    _ => return Err(EdnError::at(pos, format!("bad character literal \\{tok}"))),
                }
            }
            b'#' => {
                self.bump();
                match self.peek() {
                    Some(b'{') => Val::Set(self.seq(b'}')?),
                    Some(b) if !is_delim(b) => {
                        let tag = self.token().to_string();
                        self.skip_ws()?;
                        Val::Tagged(tag, Box::new(self.value()?))
                    }
                    _ => return Err(EdnError::at(pos, "a lone # is not EDN".into())),
                }
            }
            _ => self.atom(pos)?,
        };
        Ok(Node { val, pos })
    }

    fn seq(&mut self, close: u8) -> Result<Vec<Node>, EdnError> {
        let open = self.pos();
        self.bump();
        let mut xs = Vec::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                None => {
                    return Err(EdnError::at(
                        open,
                        format!("unclosed collection: no {:?} before the end", close as char),
                    ));
                }
                Some(b) if b == close => {
                    self.bump();
                    return Ok(xs);
                }
                Some(_) => xs.push(self.value()?),
            }
        }
    }

    fn string(&mut self) -> Result<String, EdnError> {
        let open = self.pos();
        self.bump();
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.peek().is_some_and(|b| b != b'"' && b != b'\\') {
                self.bump();
            }
            out.push_str(&self.text[start..self.i]);
            match self.peek() {
                None => return Err(EdnError::at(open, "unterminated string".into())),
                Some(b'"') => {
                    self.bump();
                    return Ok(out);
                }
                _ => {
                    self.bump();
                    let Some(e) = self.peek() else {
                        return Err(EdnError::at(open, "unterminated string".into()));
                    };
                    out.push(match e {
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        b'"' => '"',
                        b'\\' => '\\',
                        _ => return self.err(format!("unknown escape \\{}", e as char)),
                    });
                    self.bump();
                }
            }
        }
    }

    fn token(&mut self) -> &str {
        let start = self.i;
        while self.peek().is_some_and(|b| !is_delim(b)) {
            self.bump();
        }
        &self.text[start..self.i]
    }

    fn atom(&mut self, pos: Pos) -> Result<Val, EdnError> {
        let tok = self.token();
        if tok.is_empty() {
            return Err(EdnError::at(pos, "expected a value".into()));
        }
        let first = tok.as_bytes()[0];
        let numeric = first.is_ascii_digit()
            || ((first == b'-' || first == b'+')
                && tok.len() > 1
                && tok.as_bytes()[1].is_ascii_digit());
        if numeric {
            let body = tok.trim_end_matches(['N', 'M']);
            if let Ok(i) = body.parse::<i64>() {
                return Ok(Val::Int(i));
            }
            if let Ok(x) = body.parse::<f64>() {
                return Ok(Val::Float(x));
            }
            return Err(EdnError::at(pos, format!("bad number {tok:?}")));
        }
        Ok(match tok {
            "nil" => Val::Nil,
            "true" => Val::Bool(true),
            "false" => Val::Bool(false),
            _ if first == b':' => {
                if tok.len() == 1 {
                    return Err(EdnError::at(pos, "an empty keyword".into()));
                }
                Val::Keyword(tok[1..].to_string())
            }
            _ => Val::Symbol(tok.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_jepsen_ops_with_positions() {
        let text = "; a comment\n{:type :ok, :value [[:r 1 [2 3]] [:append 1 4]], :x #_ 5 \"s\\n\"}\n[1 -2 3.5 nil true \\a #{1} (x) #inst \"t\"]";
        let forms = parse_all(text).unwrap();
        assert_eq!(forms.len(), 2);
        assert_eq!(forms[0].pos, Pos { line: 2, column: 1 });
        assert_eq!(forms[0].get("type").unwrap().val, Val::Keyword("ok".into()));
        assert_eq!(forms[0].get("x").unwrap().val, Val::Str("s\n".into()));
        let value = forms[0].get("value").unwrap();
        assert_eq!(
            value.pos,
            Pos {
                line: 2,
                column: 20
            }
        );
        assert_eq!(value.to_string(), "[[:r 1 [2 3]] [:append 1 4]]");
        assert_eq!(
            forms[1].to_string(),
            "[1 -2 3.5 nil true \\a #{1} (x) #inst \"t\"]"
        );
    }

    #[test]
    fn errors_say_where() {
        let cases = [
            ("{:a 1}\n  [1 2", 2, 3, "unclosed"),
            ("{:a 1 :b}", 1, 1, "even number"),
            ("[1 2]]", 1, 6, "unexpected"),
            ("\n\n   \"abc", 3, 4, "unterminated string"),
            ("[1 2x3]", 1, 4, "bad number"),
            ("[:]", 1, 2, "empty keyword"),
        ];
        for (text, line, column, what) in cases {
            let e = parse_all(text).unwrap_err();
            assert_eq!((e.line, e.column), (line, column), "{text:?}: {e}");
            assert!(e.message.contains(what), "{text:?}: {e}");
        }
    }
}
