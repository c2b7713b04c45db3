//! Python literals written as text (what `str()` of a list of dicts gives), read as JSON
//! values: lists and tuples become arrays, dicts with string keys objects, `'..'` and `".."`
//! strings with Python's escapes, `True`/`False`/`None`, integers and floats. PopQA writes
//! some fields this way. Anything else (a set, bytes, a call, adjacent strings) is an error
//! naming the character position.

use serde_json::{Map, Number, Value};

/// Parses one Python literal, the whole text (surrounding spaces allowed).
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        chars: text.chars().collect(),
        pos: 0,
    };
    let value = p.value(0)?;
    p.spaces();
    if p.pos != p.chars.len() {
        return Err(p.error("text after the literal"));
    }
    Ok(value)
}

/// Nesting deeper than this is refused (a literal is data, not a bomb).
const MAX_DEPTH: usize = 64;

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn error(&self, what: &str) -> String {
        format!("{what} at character {}", self.pos)
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.spaces();
        match self.peek() {
            Some('[') => self.sequence(']', depth),
            Some('(') => self.sequence(')', depth),
            Some('{') => self.dict(depth),
            Some(q @ ('\'' | '"')) => self.string(q).map(Value::String),
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => self.number(),
            Some(c) if c.is_alphabetic() => self.word(),
            Some(_) => Err(self.error("unexpected character")),
            None => Err(self.error("unexpected end")),
        }
    }

    fn sequence(&mut self, close: char, depth: usize) -> Result<Value, String> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.spaces();
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.spaces();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(c) if c == close => {}
                _ => return Err(self.error(&format!("expected `,` or `{close}`"))),
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Value, String> {
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.spaces();
            if self.peek() == Some('}') {
                self.pos += 1;
                return Ok(Value::Object(map));
            }
            let key = match self.value(depth + 1)? {
                Value::String(s) => s,
                _ => return Err(self.error("a dict key that is not a string")),
            };
            self.spaces();
            if self.peek() != Some(':') {
                return Err(self.error("expected `:`"));
            }
            self.pos += 1;
            let value = self.value(depth + 1)?;
            map.insert(key, value);
            self.spaces();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some('}') => {}
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn string(&mut self, quote: char) -> Result<String, String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(c) if c == quote => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), String> {
        let Some(c) = self.peek() else {
            return Err(self.error("unterminated escape"));
        };
        self.pos += 1;
        match c {
            '\\' | '\'' | '"' => out.push(c),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            '\n' => {}
            'x' => out.push(self.hex(2)?),
            'u' => out.push(self.hex(4)?),
            'U' => out.push(self.hex(8)?),
            '0'..='7' => {
                let mut n = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            n = n * 8 + d;
                            self.pos += 1;
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(n).ok_or_else(|| self.error("bad octal escape"))?);
            }
            // Python keeps an unknown escape as written.
            other => {
                out.push('\\');
                out.push(other);
            }
        }
        Ok(())
    }

    fn hex(&mut self, len: usize) -> Result<char, String> {
        let end = self.pos + len;
        if end > self.chars.len() {
            return Err(self.error("truncated escape"));
        }
        let digits: String = self.chars[self.pos..end].iter().collect();
        let n = u32::from_str_radix(&digits, 16).map_err(|_| self.error("bad hex escape"))?;
        self.pos = end;
        char::from_u32(n).ok_or_else(|| self.error("escape out of Unicode's range"))
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.' | '_'))
        {
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos]
            .iter()
            .filter(|c| **c != '_')
            .collect();
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("`{text}` is not a number at character {start}"))
    }

    fn word(&mut self) -> Result<Value, String> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.pos += 1;
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        match word.as_str() {
            "True" => Ok(Value::Bool(true)),
            "False" => Ok(Value::Bool(false)),
            "None" => Ok(Value::Null),
            _ => Err(format!(
                "`{word}` is not a Python literal at character {start}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse;
    use serde_json::json;

    #[test]
    fn reads_what_python_str_writes() {
        let text = r#"[{'title': "O'Brien", 'text': 'Caf\xe9 \u00e9 said "hi"\n', 'is_supporting': True}, ('a', None, -2, 1.5)]"#;
        assert_eq!(
            parse(text).unwrap(),
            json!([{"title": "O'Brien", "text": "Café é said \"hi\"\n", "is_supporting": true},
                   ["a", null, -2, 1.5]])
        );
        assert_eq!(parse("  []  ").unwrap(), json!([]));
    }

    #[test]
    fn refuses_what_is_not_a_literal() {
        assert!(parse("[1, 2").unwrap_err().contains("expected"));
        assert!(parse("['a' 'b']").is_err());
        assert!(parse("{1: 'a'}").unwrap_err().contains("key"));
        assert!(parse("[open('x')]").unwrap_err().contains("open"));
        assert!(parse("'abc").unwrap_err().contains("unterminated"));
        assert!(parse(&"[".repeat(100)).unwrap_err().contains("deep"));
    }
}
