//! Reader `mquake`: MQuAKE (Zhong et al., 2023), `MQuAKE-CF` (counterfactual edits) and
//! `MQuAKE-T` (real changes over time), a JSON array of cases. Each case is a chain of
//! Wikidata facts (2 to 4 hops) and one or more edits of them (`requested_rewrite`).
//!
//! One record per **fact**, in case order: first each hop of the case's chain (`orig.triples`
//! with `single_hops`), then each edit whose fact is not on that chain (an edit of a later hop
//! of the edited chain, `new_triples`: "Indonesia's head of government" once a person's
//! country was edited to Indonesia). A fact an edit changes carries the edit. Record id:
//! `<case_id>-<hop>` (0-based hop), `<case_id>-new<hop>` for a fact of the edited chain.
//!
//! | field                | value                                                          |
//! |----------------------|----------------------------------------------------------------|
//! | `subject`, `subject_id`   | the fact's subject label and Wikidata id                  |
//! | `subject_aliases`    | the answer aliases of the hop before (the subject is its answer); `[]` for the first hop |
//! | `relation`, `relation_id` | the relation's label (`country of citizenship`) and property (`P27`) |
//! | `object`, `object_id`| the object label and Wikidata id (the true object, before any edit) |
//! | `object_aliases`     | the hop's `answer_alias` (`[]` for a fact of the edited chain: MQuAKE gives none) |
//! | `question`, `cloze`  | the hop's question and cloze (for a fact of the edited chain, the edit's `question` and its `prompt` with the subject) |
//! | `case_id`, `hop`, `hops` | the case, the fact's 0-based place in its chain, the chain's length |
//! | `chain`              | `"orig"` (the case's chain) or `"new"` (the edited chain)      |
//! | `case_questions`     | the case's multi-hop questions                                 |
//! | `edited`             | whether an edit changes this fact                              |
//! | `new_object`, `new_object_id` | the edit's `target_new` (MQuAKE-T: the real later object; MQuAKE-CF: a counterfactual one); only when `edited` |
//! | `new_object_aliases` | the edited hop's `answer_alias` in `new_single_hops` (`[]` if that hop answers otherwise); only when `edited` |
//! | `rewrite`            | the edit as the source writes it (`prompt`, `question`, ..., and in MQuAKE-CF `fact_new` and the model-written paragraph `fact_new_uns`); only when `edited` |
//!
//! MQuAKE has no Wikidata descriptions.
//!
//! Options:
//! - `facts` (`"all"`, the default, or `"edited"`): every fact, or only those an edit changes;
//! - `distinct` (boolean, default `true`): a fact is given once, the first time it is met (the
//!   same chains recur across cases: "the United States' head of state" is in many); the key is
//!   (subject, relation, object, new object) by Wikidata ids, so a fact and the same fact under
//!   another edit are two records. The reader keeps 8 bytes per distinct fact;
//! - `file_in_id` (boolean, default `false`): ids begin with the file's stem and `:`
//!   (`MQuAKE-T:3-0`), so that MQuAKE-CF and MQuAKE-T, which number their cases alike, can be
//!   read in one build without their facts' ids colliding.
//!
//! Checks (record errors naming the case's index): `case_id` a string or integer;
//! `questions` strings; `single_hops` and `new_single_hops` objects with string `question`,
//! `cloze`, `answer` and string-list `answer_alias`; `orig.triples`, `triples_labeled`,
//! `new_triples`, `new_triples_labeled` lists of three strings, as many as the hops; each
//! edit an object with string `prompt`, `relation_id`, `subject`, `question` and
//! `target_true`/`target_new` objects with string `str` and `id`, whose fact stands on the
//! chain or on the edited chain. A bad case is one reject; its facts are not given.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Map, Value};

use crate::json_array::{Converted, ElementFormat};
use crate::util::{as_object, get, id_of, req_array, req_str, req_str_array, Fault};
use crate::{ReadError, ReaderOptions};
use cb_model::json::type_name;

/// The `mquake` array format with its options and the keys of the facts given so far.
#[derive(Debug, Clone)]
pub struct Format {
    edited_only: bool,
    distinct: bool,
    seen: HashSet<u64>,
    file_in_id: bool,
    /// What every id begins with (`file_in_id`: the file's stem and `:`).
    id_prefix: String,
}

impl Format {
    /// Reads the options `facts` and `distinct`; any other option is a Config error.
    pub fn from_options(opts: &ReaderOptions) -> Result<Self, ReadError> {
        let mut format = Format {
            edited_only: false,
            distinct: true,
            seen: HashSet::new(),
            file_in_id: false,
            id_prefix: String::new(),
        };
        for (key, value) in opts {
            match (key.as_str(), value) {
                ("facts", Value::String(s)) if s == "all" => format.edited_only = false,
                ("facts", Value::String(s)) if s == "edited" => format.edited_only = true,
                ("facts", other) => {
                    return Err(ReadError::Config(format!(
                        "reader `mquake`: option `facts` must be \"all\" or \"edited\", not {other}"
                    )))
                }
                ("distinct", Value::Bool(b)) => format.distinct = *b,
                ("distinct", other) => {
                    return Err(ReadError::Config(format!(
                        "reader `mquake`: option `distinct` must be true or false, not {other}"
                    )))
                }
                ("file_in_id", Value::Bool(b)) => format.file_in_id = *b,
                ("file_in_id", other) => {
                    return Err(ReadError::Config(format!(
                        "reader `mquake`: option `file_in_id` must be true or false, not {other}"
                    )))
                }
                (other, _) => {
                    return Err(ReadError::Config(format!(
                        "reader `mquake`: unknown option `{other}` (known: facts, distinct, file_in_id)"
                    )))
                }
            }
        }
        Ok(format)
    }

    /// The format of the file at `path`: with `file_in_id`, its ids begin with the file's
    /// stem.
    pub fn for_file(mut self, path: &std::path::Path) -> Self {
        if self.file_in_id {
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            self.id_prefix = format!("{stem}:");
        }
        self
    }
}

/// One hop of a chain: its ids, labels and question.
struct Hop {
    ids: [String; 3],
    labels: [String; 3],
    question: String,
    cloze: String,
    answer: String,
    aliases: Vec<String>,
}

/// A case's two chains, hop by hop.
struct Chains {
    orig: Vec<Hop>,
    new: Vec<Hop>,
}

impl ElementFormat for Format {
    fn convert(&mut self, obj: Map<String, Value>, _index: u64) -> Result<Converted, Fault> {
        let case_id = id_of(&obj, "case_id")?;
        let questions = req_str_array(&obj, "questions", "")?;
        let chains = chains(&obj)?;
        let rewrites = req_array(&obj, "requested_rewrite", "")?;
        let mut on_orig: Vec<Option<&Map<String, Value>>> = vec![None; chains.orig.len()];
        let mut on_new: Vec<(usize, &Map<String, Value>)> = Vec::new();
        for (j, r) in rewrites.iter().enumerate() {
            let prefix = format!("requested_rewrite[{j}]");
            let r = as_object(r, &prefix)?;
            let edit = Edit::read(r, &prefix)?;
            if let Some(i) = chains.orig.iter().position(|h| edit.holds(h, false)) {
                on_orig[i] = Some(r);
            } else if let Some(i) = chains.new.iter().position(|h| edit.holds(h, true)) {
                on_new.push((i, r));
            } else {
                return Err(Fault::bad(format!(
                    "`{prefix}` ({} {} {}) is on neither chain of the case",
                    edit.subject, edit.relation_id, edit.true_id
                )));
            }
        }
        let case = CaseInfo {
            case_id: &case_id,
            hops: chains.orig.len(),
            questions: &questions,
        };
        let mut out = Vec::new();
        for (i, hop) in chains.orig.iter().enumerate() {
            let prev = i.checked_sub(1).map(|p| &chains.orig[p]);
            let fact = case.fact(hop, prev, i, "orig");
            self.push(&mut out, fact, on_orig[i], chains.new.get(i))?;
        }
        for (i, r) in on_new {
            let hop = &chains.new[i];
            let prev = i.checked_sub(1).map(|p| &chains.new[p]);
            let fact = case.fact_of_edit(hop, prev, i, r)?;
            self.push(&mut out, fact, Some(r), Some(hop))?;
        }
        Ok(out)
    }

    fn id_key(&self) -> &str {
        "case_id"
    }
}

impl Format {
    /// Adds the edit to a fact and keeps it when the options want it.
    fn push(
        &mut self,
        out: &mut Vec<(String, Map<String, Value>)>,
        (id, mut fields): (String, Map<String, Value>),
        rewrite: Option<&Map<String, Value>>,
        new_hop: Option<&Hop>,
    ) -> Result<(), Fault> {
        let mut new_id = String::new();
        fields.insert("edited".into(), Value::Bool(rewrite.is_some()));
        if let Some(r) = rewrite {
            let edit = Edit::read(r, "requested_rewrite")?;
            let aliases = new_hop
                .filter(|h| h.answer == edit.new_label)
                .map(|h| h.aliases.clone())
                .unwrap_or_default();
            new_id = edit.new_id.clone();
            fields.insert("new_object".into(), Value::String(edit.new_label));
            fields.insert("new_object_id".into(), Value::String(edit.new_id));
            fields.insert("new_object_aliases".into(), strings(aliases));
            fields.insert("rewrite".into(), Value::Object(r.clone()));
        } else if self.edited_only {
            return Ok(());
        }
        if self.distinct {
            let mut h = DefaultHasher::new();
            for key in ["subject_id", "relation_id", "object_id"] {
                fields.get(key).and_then(Value::as_str).hash(&mut h);
            }
            new_id.hash(&mut h);
            if !self.seen.insert(h.finish()) {
                return Ok(());
            }
        }
        out.push((format!("{}{id}", self.id_prefix), fields));
        Ok(())
    }
}

/// What a case gives every one of its facts.
struct CaseInfo<'a> {
    case_id: &'a str,
    hops: usize,
    questions: &'a [String],
}

impl CaseInfo<'_> {
    fn fact(
        &self,
        hop: &Hop,
        prev: Option<&Hop>,
        i: usize,
        chain: &str,
    ) -> (String, Map<String, Value>) {
        let mut f = Map::new();
        let [s_id, r_id, o_id] = hop.ids.clone();
        let [s, r, o] = hop.labels.clone();
        f.insert("subject".into(), Value::String(s));
        f.insert("subject_id".into(), Value::String(s_id));
        let prev_aliases = prev.map(|p| p.aliases.clone()).unwrap_or_default();
        f.insert("subject_aliases".into(), strings(prev_aliases));
        f.insert("relation".into(), Value::String(r));
        f.insert("relation_id".into(), Value::String(r_id));
        f.insert("object".into(), Value::String(o));
        f.insert("object_id".into(), Value::String(o_id));
        f.insert("object_aliases".into(), strings(hop.aliases.clone()));
        f.insert("question".into(), Value::String(hop.question.clone()));
        f.insert("cloze".into(), Value::String(hop.cloze.clone()));
        f.insert("case_id".into(), Value::String(self.case_id.to_string()));
        f.insert("hop".into(), Value::from(i));
        f.insert("hops".into(), Value::from(self.hops));
        f.insert("chain".into(), Value::String(chain.to_string()));
        f.insert("case_questions".into(), strings(self.questions.to_vec()));
        let id = if chain == "orig" {
            format!("{}-{i}", self.case_id)
        } else {
            format!("{}-new{i}", self.case_id)
        };
        (id, f)
    }

    /// The true fact an edit of the edited chain changes: its object is the edit's
    /// `target_true`, which the edited chain does not hold.
    fn fact_of_edit(
        &self,
        hop: &Hop,
        prev: Option<&Hop>,
        i: usize,
        r: &Map<String, Value>,
    ) -> Result<(String, Map<String, Value>), Fault> {
        let edit = Edit::read(r, "requested_rewrite")?;
        let (id, mut f) = self.fact(hop, prev, i, "new");
        f.insert("object".into(), Value::String(edit.true_label));
        f.insert("object_id".into(), Value::String(edit.true_id));
        f.insert("object_aliases".into(), Value::Array(Vec::new()));
        f.insert(
            "question".into(),
            Value::String(req_str(r, "question", "")?),
        );
        let cloze = edit.prompt.replace("{}", &edit.subject);
        f.insert("cloze".into(), Value::String(cloze));
        Ok((id, f))
    }
}

/// An edit's parts.
struct Edit {
    prompt: String,
    subject: String,
    relation_id: String,
    true_label: String,
    true_id: String,
    new_label: String,
    new_id: String,
}

impl Edit {
    fn read(r: &Map<String, Value>, prefix: &str) -> Result<Self, Fault> {
        req_str(r, "question", prefix)?;
        let target = |key: &str| -> Result<(String, String), Fault> {
            let p = format!("{prefix}.{key}");
            let t = as_object(get(r, key, prefix)?, &p)?;
            Ok((req_str(t, "str", &p)?, req_str(t, "id", &p)?))
        };
        let (true_label, true_id) = target("target_true")?;
        let (new_label, new_id) = target("target_new")?;
        Ok(Edit {
            prompt: req_str(r, "prompt", prefix)?,
            subject: req_str(r, "subject", prefix)?,
            relation_id: req_str(r, "relation_id", prefix)?,
            true_label,
            true_id,
            new_label,
            new_id,
        })
    }

    /// Whether this edit changes the fact of `hop`: on the case's chain the hop holds the true
    /// object, on the edited chain the new one.
    fn holds(&self, hop: &Hop, edited_chain: bool) -> bool {
        let object = if edited_chain {
            &self.new_id
        } else {
            &self.true_id
        };
        hop.labels[0] == self.subject && hop.ids[1] == self.relation_id && &hop.ids[2] == object
    }
}

fn chains(obj: &Map<String, Value>) -> Result<Chains, Fault> {
    let orig = as_object(get(obj, "orig", "")?, "orig")?;
    let chain = |triples: &str, hops: &str| -> Result<Vec<Hop>, Fault> {
        let ids = triple_list(orig, triples)?;
        let labels = triple_list(orig, &format!("{triples}_labeled"))?;
        let steps = req_array(obj, hops, "")?;
        if ids.len() != labels.len() || ids.len() != steps.len() {
            return Err(Fault::bad(format!(
                "`orig.{triples}` has {} hops, `orig.{triples}_labeled` {} and `{hops}` {}",
                ids.len(),
                labels.len(),
                steps.len()
            )));
        }
        ids.into_iter()
            .zip(labels)
            .zip(steps)
            .enumerate()
            .map(|(i, ((ids, labels), step))| {
                let prefix = format!("{hops}[{i}]");
                let step = as_object(step, &prefix)?;
                Ok(Hop {
                    ids,
                    labels,
                    question: req_str(step, "question", &prefix)?,
                    cloze: req_str(step, "cloze", &prefix)?,
                    answer: req_str(step, "answer", &prefix)?,
                    aliases: req_str_array(step, "answer_alias", &prefix)?,
                })
            })
            .collect()
    };
    Ok(Chains {
        orig: chain("triples", "single_hops")?,
        new: chain("new_triples", "new_single_hops")?,
    })
}

/// `orig.<key>`: a list of `[subject, relation, object]` string triples.
fn triple_list(orig: &Map<String, Value>, key: &str) -> Result<Vec<[String; 3]>, Fault> {
    let what = format!("orig.{key}");
    match get(orig, key, "orig")? {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let parts = match t {
                    Value::Array(parts) => crate::util::str_items(parts, &format!("{what}[{i}]"))?,
                    other => {
                        return Err(Fault::bad(format!(
                            "`{what}[{i}]` is {}, not a triple",
                            type_name(other)
                        )))
                    }
                };
                <[String; 3]>::try_from(parts)
                    .map_err(|p| Fault::bad(format!("`{what}[{i}]` has {} parts, not 3", p.len())))
            })
            .collect(),
        other => Err(Fault::bad(format!(
            "`{what}` is {}, not a list",
            type_name(other)
        ))),
    }
}

fn strings(items: Vec<String>) -> Value {
    Value::Array(items.into_iter().map(Value::String).collect())
}
