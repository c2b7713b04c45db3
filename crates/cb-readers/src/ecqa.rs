//! Readers `ecqa_csv` and `ecqa_jsonl`: ECQA (Aggarwal et al., 2021), explanations of
//! CommonsenseQA questions.
//!
//! # `ecqa_csv`
//! The `cqa_data_{train,val,test}.csv` files that ECQA's script writes with pandas: a leading
//! unnamed index column (empty header cell), then `q_no, q_concept, q_text, q_op1 .. q_op5,
//! q_ans, taskA_pos, taskA_neg, taskB`. Columns are found by header name, so their order does
//! not matter and extra columns are ignored. Quoted cells may span lines (`taskA_pos` and
//! `taskA_neg` are newline-joined lists); a record's `line` is the line where it starts.
//!
//! | field              | value                                                           |
//! |--------------------|-----------------------------------------------------------------|
//! | `id`               | `q_no`: the CommonsenseQA id (also the record id)               |
//! | `question`         | `q_text`                                                        |
//! | `question_concept` | `q_concept`                                                     |
//! | `choices`          | `[q_op1, .., q_op5]`                                            |
//! | `labels`           | `["A", "B", "C", "D", "E"]`                                     |
//! | `answerKey`        | the label of the first option equal to `q_ans`                  |
//! | `answer_text`      | `q_ans`                                                         |
//! | `positives`        | `taskA_pos` split on newlines, each trimmed, empty ones dropped  |
//! | `negatives`        | `taskA_neg`, the same way                                       |
//! | `explanation`      | `taskB`: the free-flow explanation                              |
//!
//! `answerKey` compares options and `q_ans` exactly, then (if none matched) trimmed and
//! case-insensitively; no match is a `bad_value` record error. A row with fewer cells than the
//! header is a `missing_field` error naming the first missing column, one with more cells a
//! `bad_value` error, an empty `q_no` a `missing_field` error. A header that lacks one of the
//! columns is a fatal File error.
//!
//! Quirk: a few CommonsenseQA questions have two identical options; the CSV keeps only the
//! answer text, so `answerKey` is then the first of the two labels.
//!
//! # `ecqa_jsonl`
//! ECQA's `ecqa.jsonl`, one object a line `{"id", "positives": [..], "negatives": [..],
//! "explanation"}`, to be joined with CommonsenseQA by id. Fields, all required: `id`
//! (string, the record id), `positives` and `negatives` (arrays of strings), `explanation`
//! (string).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::{Map, Value};

use crate::util::{id_of, open_file, req_str, req_str_array, Fault, LineFormat};
use crate::{ReadError, Records, SourceRecord};
use cb_model::Origin;

/// The columns `ecqa_csv` needs, in the order of [`Columns::index`].
const COLUMNS: [&str; 12] = [
    "q_no",
    "q_concept",
    "q_text",
    "q_op1",
    "q_op2",
    "q_op3",
    "q_op4",
    "q_op5",
    "q_ans",
    "taskA_pos",
    "taskA_neg",
    "taskB",
];
const LABELS: [&str; 5] = ["A", "B", "C", "D", "E"];

/// The cell index of each of [`COLUMNS`].
struct Columns {
    index: [usize; 12],
    header_len: usize,
}

pub(crate) fn open_csv(path: &Path, file: String) -> Result<Records, ReadError> {
    let handle = open_file(path, &file)?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(true)
        .from_reader(BufReader::new(handle));
    let header = reader.headers().map_err(|e| ReadError::File {
        file: file.clone(),
        message: format!("cannot read the CSV header: {e}"),
    })?;
    let names: Vec<&str> = header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == 0 {
                h.trim_start_matches('\u{feff}')
            } else {
                h
            }
        })
        .map(str::trim)
        .collect();
    let mut index = [0usize; 12];
    for (slot, column) in index.iter_mut().zip(COLUMNS) {
        *slot = names.iter().position(|n| *n == column).ok_or_else(|| ReadError::File {
            file: file.clone(),
            message: format!(
                "the CSV header lacks column `{column}` (found: {}); is this an ECQA cqa_data file?",
                names.join(", ")
            ),
        })?;
    }
    let columns = Columns {
        index,
        header_len: names.len(),
    };
    Ok(Box::new(CsvRecords {
        file,
        reader,
        columns,
        record: csv::StringRecord::new(),
        done: false,
    }))
}

struct CsvRecords {
    file: String,
    reader: csv::Reader<BufReader<File>>,
    columns: Columns,
    record: csv::StringRecord,
    done: bool,
}

impl Iterator for CsvRecords {
    type Item = Result<SourceRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            match self.reader.read_record(&mut self.record) {
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Ok(true) => {}
                Err(e) => {
                    let line = e.position().map(csv::Position::line).unwrap_or(0);
                    return Some(Err(match e.kind() {
                        csv::ErrorKind::Io(io) => {
                            self.done = true;
                            ReadError::File {
                                file: self.file.clone(),
                                message: format!("read error: {io}"),
                            }
                        }
                        csv::ErrorKind::Utf8 { err, .. } => ReadError::Record {
                            file: self.file.clone(),
                            line,
                            id: None,
                            code: "bad_encoding",
                            message: format!(
                                "invalid UTF-8 in cell {} of the record",
                                err.field() + 1
                            ),
                        },
                        _ => ReadError::Record {
                            file: self.file.clone(),
                            line,
                            id: None,
                            code: "malformed_csv",
                            message: e.to_string(),
                        },
                    }));
                }
            }
            let line = self.record.position().map(csv::Position::line).unwrap_or(0);
            if self.record.iter().all(|c| c.trim().is_empty()) {
                continue;
            }
            return Some(match convert(&self.columns, &self.record) {
                Ok((id, fields)) => Ok(SourceRecord {
                    id,
                    origin: Origin {
                        file: self.file.clone(),
                        line,
                    },
                    fields,
                }),
                Err(fault) => Err(ReadError::Record {
                    file: self.file.clone(),
                    line,
                    id: None,
                    code: fault.code,
                    message: fault.message,
                }),
            });
        }
    }
}

fn convert(
    columns: &Columns,
    record: &csv::StringRecord,
) -> Result<(String, Map<String, Value>), Fault> {
    check_cells(columns, record.len())?;
    let cell = |k: usize| record.get(columns.index[k]).unwrap_or_default().to_string();
    let id = cell(0);
    if id.trim().is_empty() {
        return Err(Fault {
            code: "missing_field",
            message: "column `q_no` is empty".into(),
        });
    }
    let options: Vec<String> = (3..8).map(cell).collect();
    let answer = cell(8);
    let position = answer_position(&options, &answer)?;
    let mut fields = Map::new();
    fields.insert("id".into(), Value::String(id.clone()));
    fields.insert("question".into(), Value::String(cell(2)));
    fields.insert("question_concept".into(), Value::String(cell(1)));
    fields.insert(
        "choices".into(),
        Value::Array(options.into_iter().map(Value::String).collect()),
    );
    fields.insert(
        "labels".into(),
        Value::Array(
            LABELS
                .iter()
                .map(|l| Value::String((*l).to_string()))
                .collect(),
        ),
    );
    fields.insert(
        "answerKey".into(),
        Value::String(LABELS[position].to_string()),
    );
    fields.insert("answer_text".into(), Value::String(answer));
    fields.insert("positives".into(), split_lines(&cell(9)));
    fields.insert("negatives".into(), split_lines(&cell(10)));
    fields.insert("explanation".into(), Value::String(cell(11)));
    Ok((id, fields))
}

/// That the row has as many cells as the header; else which column it lacks, or that it
/// has too many.
fn check_cells(columns: &Columns, cells: usize) -> Result<(), Fault> {
    if cells < columns.header_len {
        // Name the first column, in header order, that the row lacks.
        let mut missing: Vec<(usize, &str)> = columns
            .index
            .iter()
            .zip(COLUMNS)
            .filter(|(i, _)| **i >= cells)
            .map(|(i, c)| (*i, c))
            .collect();
        missing.sort_unstable();
        if let Some((_, column)) = missing.first() {
            return Err(Fault {
                code: "missing_field",
                message: format!(
                    "the row has {cells} cells but the header {}: column `{column}` is missing",
                    columns.header_len
                ),
            });
        }
    } else if cells > columns.header_len {
        return Err(Fault::bad(format!(
            "the row has {cells} cells but the header only {}",
            columns.header_len
        )));
    }
    Ok(())
}

/// The option `answer` is: the same text, else the same once trimmed and lower-cased.
fn answer_position(options: &[String], answer: &str) -> Result<usize, Fault> {
    let position = options.iter().position(|o| *o == answer).or_else(|| {
        let wanted = answer.trim().to_lowercase();
        options
            .iter()
            .position(|o| o.trim().to_lowercase() == wanted)
    });
    position.ok_or_else(|| {
        Fault::bad(format!(
            "q_ans `{answer}` equals none of the options {}",
            options
                .iter()
                .map(|o| format!("`{o}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// A newline-joined list as an array: each line trimmed, empty lines dropped.
fn split_lines(cell: &str) -> Value {
    Value::Array(
        cell.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| Value::String(l.to_string()))
            .collect(),
    )
}

/// The `ecqa_jsonl` line format.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonlFormat;

impl LineFormat for JsonlFormat {
    fn convert(&self, obj: Map<String, Value>) -> Result<(String, Map<String, Value>), Fault> {
        let id = id_of(&obj, "id")?;
        let positives = req_str_array(&obj, "positives", "")?;
        let negatives = req_str_array(&obj, "negatives", "")?;
        let explanation = req_str(&obj, "explanation", "")?;
        let strings = |v: Vec<String>| Value::Array(v.into_iter().map(Value::String).collect());
        let mut fields = Map::new();
        fields.insert("id".into(), Value::String(id.clone()));
        fields.insert("positives".into(), strings(positives));
        fields.insert("negatives".into(), strings(negatives));
        fields.insert("explanation".into(), Value::String(explanation));
        Ok((id, fields))
    }
}
