//! Reader `uj`: UJ-CS/Math/Phy (Huang et al., 2022), scientific terms of computer science,
//! mathematics and physics, each with the sentences extracted about it and a one-sentence
//! definition. Two forms, chosen by the file extension, give the same records:
//!
//! - **parallel text** (`.src`): the generator's layout `data/<domain>-top5/<split>.{src,tgt}`.
//!   The given path is the `<split>.src` file; its target is the sibling `<split>.tgt` (same
//!   stem). Line N of `.src` pairs with line N of `.tgt`; both files are streamed line by
//!   line in lockstep. A source line holds the term, then the sentences; the target line is
//!   the definition.
//! - **JSON lines** (`.jsonl` or `.json`): one object a line,
//!   `{"term": "..", "sentences": ["..", ..], "definition": ".."}` with optional `"id"` and
//!   `"domain"` strings. Other keys are ignored.
//!
//! Any other extension is a Config error.
//!
//! Fields, in this order:
//!
//! | field        | value                                                            |
//! |--------------|------------------------------------------------------------------|
//! | `term`       | the scientific term                                              |
//! | `sentences`  | the sentences about the term, in file order (array of strings)   |
//! | `definition` | the one-sentence definition                                      |
//! | `domain`     | the domain name (`cs`, `math`, `phy`, ...)                        |
//!
//! Term, sentences and definition are trimmed of surrounding whitespace; empty sentences are
//! dropped. All other sentences are kept: keeping only terms with five sentences is the
//! recipe's job, not the reader's.
//!
//! Record id: `<domain>/<split>/<line>` with `<split>` the file stem (`test` for
//! `test.src`) and `<line>` the 1-based line; in JSON lines the `id` key (a string, or a
//! number written as text) when present, else the same positional id.
//!
//! Options:
//! - `separator` (non-empty string, default the TAB character `"\t"`): what separates the
//!   sentences of a source line. **The separator of the original UJ files is not known
//!   here; the TAB default is this project's convention**, not a fact about the release: set
//!   the option to what the actual files use.
//! - `term_separator` (non-empty string, default: the same as `separator`): what separates
//!   the term from the first sentence (the line is split at its first occurrence).
//! - `domain` (non-empty string): the domain written on every record. Default: for the
//!   parallel form, the name of the folder holding the file with a `-top5` suffix removed
//!   (`data/cs-top5/test.src` -> `cs`); for JSON lines, the line's `domain` key, else that
//!   same folder name.
//!
//! `separator` and `term_separator` apply to the parallel form only; JSON lines ignore them,
//! so one recipe can list both forms.
//!
//! Errors (besides those of every reader, see the crate documentation):
//! - the `.tgt` file is missing or unreadable: a File error naming it;
//! - the two files have different numbers of lines: a `missing_field` record error at the
//!   first extra line of the longer file (naming that file), then the iterator stops.
//!   Blank lines at the end of the longer file are not counted;
//! - an empty term, no sentence, or an empty definition: a `missing_field` record error at
//!   that line (naming the `.src` file, or the `.tgt` one for the definition); reading goes
//!   on with the next line. A line that is blank in both files is skipped;
//! - JSON lines: a missing `term`, `sentences` or `definition` key is `missing_field`, a
//!   value of the wrong type (also for `id` and `domain`) is `bad_value`.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use crate::util::LineFormat;
use crate::util::{id_of, json_lines, open_file, opt_str, req_str, req_str_array, Fault};
use crate::{ReadError, ReaderOptions, Records, SourceRecord};
use cb_model::json::type_name;
use cb_model::Origin;

/// The options of the `uj` reader.
#[derive(Debug, Clone)]
struct Options {
    separator: String,
    term_separator: String,
    domain: Option<String>,
}

impl Options {
    fn from_options(opts: &ReaderOptions) -> Result<Self, ReadError> {
        let mut separator = None;
        let mut term_separator = None;
        let mut domain = None;
        for (key, value) in opts {
            let slot = match key.as_str() {
                "separator" => &mut separator,
                "term_separator" => &mut term_separator,
                "domain" => &mut domain,
                other => {
                    return Err(ReadError::Config(format!(
                        "reader `uj` has no option `{other}` (options: separator, term_separator, domain)"
                    )))
                }
            };
            match value {
                Value::String(s) if !s.is_empty() => *slot = Some(s.clone()),
                other => {
                    let what = match other {
                        Value::String(_) => "an empty string",
                        other => type_name(other),
                    };
                    return Err(ReadError::Config(format!(
                        "reader `uj`: option `{key}` must be a non-empty string, not {what}"
                    )));
                }
            }
        }
        let separator = separator.unwrap_or_else(|| "\t".to_string());
        let term_separator = term_separator.unwrap_or_else(|| separator.clone());
        Ok(Options {
            separator,
            term_separator,
            domain,
        })
    }
}

/// Opens a UJ file in the form its extension names.
pub(crate) fn open(path: &Path, file: String, opts: &ReaderOptions) -> Result<Records, ReadError> {
    let options = Options::from_options(opts)?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("src") => open_parallel(path, file, options),
        Some("jsonl") | Some("json") => {
            let format = JsonFormat {
                domain: options.domain.or_else(|| folder_domain(path)),
                from_option: opts.contains_key("domain"),
                split: split_of(path),
            };
            json_lines(path, file, format)
        }
        _ => Err(ReadError::Config(format!(
            "reader `uj`: {file}: expected a `.src` file (with its `.tgt` sibling) or a \
             `.jsonl`/`.json` file"
        ))),
    }
}

/// The split name: the file stem (`test` for `test.src`).
fn split_of(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The name of the folder holding `path`, without a `-top5` suffix; `None` when there is
/// no such name.
fn folder_domain(path: &Path) -> Option<String> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    let name = match parent.file_name() {
        Some(n) => n.to_os_string(),
        None => std::fs::canonicalize(&parent)
            .ok()?
            .file_name()?
            .to_os_string(),
    };
    let name = name.to_string_lossy();
    let name = name.strip_suffix("-top5").unwrap_or(&name);
    (!name.is_empty()).then(|| name.to_string())
}

// ---------------------------------------------------------------- parallel text

fn open_parallel(path: &Path, file: String, options: Options) -> Result<Records, ReadError> {
    let src = open_file(path, &file)?;
    let tgt_path = path.with_extension("tgt");
    let tgt_file = tgt_path.display().to_string();
    let tgt = open_file(&tgt_path, &tgt_file)?;
    let domain = match options.domain {
        Some(d) => d,
        None => folder_domain(path).ok_or_else(|| {
            ReadError::Config(format!(
                "reader `uj`: cannot name the domain of {file} from its folder; set option `domain`"
            ))
        })?,
    };
    Ok(Box::new(Parallel {
        src_file: file,
        tgt_file,
        src: Lines::new(src),
        tgt: Lines::new(tgt),
        line: 0,
        done: false,
        separator: options.separator,
        term_separator: options.term_separator,
        domain,
        split: split_of(path),
    }))
}

/// One file read line by line, the line end (and a first line's BOM) removed.
struct Lines {
    reader: BufReader<File>,
    buf: Vec<u8>,
    first: bool,
}

impl Lines {
    fn new(file: File) -> Self {
        Lines {
            reader: BufReader::new(file),
            buf: Vec::new(),
            first: true,
        }
    }

    /// Reads the next line into `buf`; `false` at the end of the file.
    fn advance(&mut self) -> std::io::Result<bool> {
        self.buf.clear();
        if self.reader.read_until(b'\n', &mut self.buf)? == 0 {
            return Ok(false);
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        if std::mem::take(&mut self.first) && self.buf.starts_with(b"\xEF\xBB\xBF") {
            self.buf.drain(..3);
        }
        Ok(true)
    }

    fn is_blank(&self) -> bool {
        self.buf.iter().all(u8::is_ascii_whitespace)
    }

    fn text(&self) -> Result<&str, Fault> {
        std::str::from_utf8(&self.buf).map_err(|e| Fault {
            code: "bad_encoding",
            message: format!("invalid UTF-8 after byte {} of the line", e.valid_up_to()),
        })
    }
}

/// The `.src` and `.tgt` files read in lockstep.
struct Parallel {
    src_file: String,
    tgt_file: String,
    src: Lines,
    tgt: Lines,
    line: u64,
    done: bool,
    separator: String,
    term_separator: String,
    domain: String,
    split: String,
}

impl Parallel {
    fn error(&self, file: &str, fault: Fault) -> ReadError {
        ReadError::Record {
            file: file.to_string(),
            line: self.line,
            id: None,
            code: fault.code,
            message: fault.message,
        }
    }

    fn read_error(&mut self, file: String, e: std::io::Error) -> ReadError {
        self.done = true;
        ReadError::File {
            file,
            message: format!("read error after line {}: {e}", self.line),
        }
    }

    /// The record of the current line pair, both present and not both blank.
    fn record(&self) -> Result<SourceRecord, ReadError> {
        let src = self.src.text().map_err(|f| self.error(&self.src_file, f))?;
        let tgt = self.tgt.text().map_err(|f| self.error(&self.tgt_file, f))?;
        let (term, rest) = src.split_once(&self.term_separator).unwrap_or((src, ""));
        let term = term.trim();
        if term.is_empty() {
            let fault = Fault {
                code: "missing_field",
                message: "empty term".to_string(),
            };
            return Err(self.error(&self.src_file, fault));
        }
        let sentences: Vec<Value> = rest
            .split(self.separator.as_str())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| Value::String(s.to_string()))
            .collect();
        if sentences.is_empty() {
            let fault = Fault {
                code: "missing_field",
                message: format!(
                    "no sentence after the term `{term}` (term separator {:?}, separator {:?})",
                    self.term_separator, self.separator
                ),
            };
            return Err(self.error(&self.src_file, fault));
        }
        let definition = tgt.trim();
        if definition.is_empty() {
            let fault = Fault {
                code: "missing_field",
                message: format!("empty definition for the term `{term}`"),
            };
            return Err(self.error(&self.tgt_file, fault));
        }
        Ok(SourceRecord {
            id: format!("{}/{}/{}", self.domain, self.split, self.line),
            origin: Origin {
                file: self.src_file.clone(),
                line: self.line,
            },
            fields: fields(term, sentences, definition, &self.domain),
        })
    }
}

impl Iterator for Parallel {
    type Item = Result<SourceRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let has_src = match self.src.advance() {
                Ok(b) => b,
                Err(e) => return Some(Err(self.read_error(self.src_file.clone(), e))),
            };
            let has_tgt = match self.tgt.advance() {
                Ok(b) => b,
                Err(e) => return Some(Err(self.read_error(self.tgt_file.clone(), e))),
            };
            self.line += 1;
            let (longer, shorter) = match (has_src, has_tgt) {
                (false, false) => {
                    self.done = true;
                    return None;
                }
                (true, true) if self.src.is_blank() && self.tgt.is_blank() => continue,
                (true, true) => return Some(self.record()),
                (true, false) if self.src.is_blank() => continue,
                (false, true) if self.tgt.is_blank() => continue,
                (true, false) => (&self.src_file, &self.tgt_file),
                (false, true) => (&self.tgt_file, &self.src_file),
            };
            let fault = Fault {
                code: "missing_field",
                message: format!(
                    "{shorter} has fewer lines than {longer}: line {} has no counterpart",
                    self.line
                ),
            };
            let error = self.error(longer, fault);
            self.done = true;
            return Some(Err(error));
        }
    }
}

fn fields(term: &str, sentences: Vec<Value>, definition: &str, domain: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("term".into(), Value::String(term.to_string()));
    fields.insert("sentences".into(), Value::Array(sentences));
    fields.insert("definition".into(), Value::String(definition.to_string()));
    fields.insert("domain".into(), Value::String(domain.to_string()));
    fields
}

// ---------------------------------------------------------------- JSON lines

/// The JSON-lines form.
struct JsonFormat {
    /// The `domain` option, else the folder's name.
    domain: Option<String>,
    /// Whether `domain` comes from the option (it then wins over the line's key).
    from_option: bool,
    split: String,
}

impl LineFormat for JsonFormat {
    fn convert(&self, obj: Map<String, Value>) -> Result<(String, Map<String, Value>), Fault> {
        self.convert_at(obj, 0)
    }

    fn convert_at(
        &self,
        obj: Map<String, Value>,
        line: u64,
    ) -> Result<(String, Map<String, Value>), Fault> {
        let term = req_str(&obj, "term", "")?;
        let term = term.trim();
        if term.is_empty() {
            return Err(Fault {
                code: "missing_field",
                message: "empty term".to_string(),
            });
        }
        let sentences: Vec<Value> = req_str_array(&obj, "sentences", "")?
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(|s| Value::String(s.to_string()))
            .collect();
        if sentences.is_empty() {
            return Err(Fault {
                code: "missing_field",
                message: format!("no sentence for the term `{term}`"),
            });
        }
        let definition = req_str(&obj, "definition", "")?;
        let definition = definition.trim();
        if definition.is_empty() {
            return Err(Fault {
                code: "missing_field",
                message: format!("empty definition for the term `{term}`"),
            });
        }
        let own = opt_str(&obj, "domain", "")?
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty());
        let domain = if self.from_option {
            self.domain.clone()
        } else {
            own.or_else(|| self.domain.clone())
        };
        let domain = domain.ok_or_else(|| Fault::missing("domain"))?;
        let id = if obj.contains_key("id") {
            id_of(&obj, "id")?
        } else {
            format!("{domain}/{}/{line}", self.split)
        };
        Ok((id, fields(term, sentences, definition, &domain)))
    }
}
