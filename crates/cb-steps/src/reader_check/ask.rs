//! How the reader is asked one check of a row, by the build's reader check and by `audit
//! --reader-…` alike: the prompts and votes ([`ReaderSpec`]), the question ([`Question`]),
//! the check ([`Check`]), who asks ([`Asker`]), the votes in the row's and seeded orders
//! ([`ask_check`]), and KRE appendix A.4's three-level rating ([`rate`]).

use crate::prelude::*;
use cb_llm::{Llm, LlmError, Message};
use cb_model::letter;
use cb_step::choice::{self, Sampling, Verdict};
use cb_step::{CallRecord, Prompt};

/// How the reader is asked: the question prompt (`eval/kre.md` or `eval/recall_qa.md`),
/// the answer-set prompt when that check runs, votes per check, answer length.
#[derive(Debug)]
pub struct ReaderSpec {
    pub prompt: Prompt,
    pub answer_set: Option<Prompt>,
    /// The editor's questions about a passage or an answer (`reader/judge.md`), when such
    /// checks run (RECALL's `kind` and `coherent`).
    pub judge: Option<Prompt>,
    pub votes: u32,
    pub max_tokens: u32,
}

impl ReaderSpec {
    /// The question prompt `prompt` of `prompts` (no answer-set test), `votes` per check.
    pub fn load(prompts: &Files, prompt: &str, votes: u32) -> Result<Self, StepError> {
        Ok(ReaderSpec {
            prompt: Prompt::load(prompts, prompt)?,
            answer_set: None,
            judge: None,
            votes,
            max_tokens: 32,
        })
    }

    /// The template `check` is asked with: the judge prompt for a judged check, the
    /// answer-set prompt for the options alone, else the reader's question.
    pub fn prompt_of(&self, check: &Check<'_>) -> &Prompt {
        match (&self.answer_set, &self.judge, check.context) {
            (_, Some(p), _) if check.judged => p,
            (Some(p), _, None) => p,
            _ => &self.prompt,
        }
    }
}

/// The template environment questions are rendered in.
pub type Env = minijinja::Environment<'static>;

/// A new template environment (the one recipes and prompts share).
pub fn environment() -> Env {
    cb_step::template::environment()
}

/// KRE appendix A.4's levels of how far a negative context misleads, as the options of the
/// rating question (`reader/rate.md`).
pub const LEVELS: [&str; 3] = ["Not misleading", "Somewhat misleading", "Highly misleading"];

/// Asks the reader to rate how far `context` pushes a reader of `q` towards `target`, on
/// [`LEVELS`] (`a.spec.prompt` is the rating template): the index of the level, `None`
/// when the answer names none. One vote.
pub async fn rate(
    a: Asker<'_>,
    q: Question<'_>,
    context: &str,
    target: &str,
) -> Result<Option<usize>, LlmError> {
    let levels: Vec<String> = LEVELS.iter().map(|s| (*s).to_owned()).collect();
    let vars = minijinja::context! {
        context => context,
        question => q.question,
        choices => choice::option_views(q.choices),
        target => target,
        options => choice::option_views(&levels),
    };
    let p = &a.spec.prompt;
    let messages = p
        .render(a.env, &vars)
        .map_err(|e| LlmError::Config(format!("cannot render prompt {e}")))?;
    let call = choice::call(
        messages,
        (&p.name, &p.hash),
        q.id,
        None,
        Sampling {
            temperature: 0.0,
            max_tokens: a.spec.max_tokens,
        },
        letter(2),
    );
    let c = a.reader.complete(&call).await?;
    Ok(choice::extract(&c.text, &levels).choice)
}

/// A row's multiple-choice question as the reader sees it.
#[derive(Debug, Clone, Copy)]
pub struct Question<'a> {
    /// The item's id, for seeded orders and logs.
    pub id: &'a str,
    pub question: &'a str,
    pub choices: &'a [String],
}

/// The option a check with `none_option` shows last (its index in the row's order is the
/// number of the row's options).
pub use cb_model::NONE_OPTION;

/// One check: which context the reader gets (`None`: the options alone, the answer-set
/// test), and the option it must pick; `judged` checks ask the editor's question of the
/// judge prompt (the check's own question and options) instead of the row's; `none_option`
/// shows [`NONE_OPTION`] last.
#[derive(Debug, Clone)]
pub struct Check<'a> {
    pub name: &'a str,
    pub context: Option<&'a str>,
    pub expected: usize,
    pub judged: bool,
    pub none_option: bool,
}

/// Where a check is asked from: the seed and scope of its seeded option orders
/// (`item_rng(seed, scope, item, "reader-CHECK-V")`) and the step name its calls are recorded
/// under.
#[derive(Debug, Clone, Copy)]
pub struct Asker<'a> {
    pub reader: &'a Llm,
    pub spec: &'a ReaderSpec,
    pub env: &'a minijinja::Environment<'static>,
    pub seed: u64,
    pub scope: &'a str,
    pub step: &'a str,
}

/// Asks the reader one check of `q`, `spec.votes` times: the first vote with the options in
/// the row's order, the others in seeded orders. A call that fails for good is an error
/// (fatal or not: the caller decides); an answer that names no option is an invalid vote.
pub async fn ask_check(
    a: Asker<'_>,
    q: Question<'_>,
    check: &Check<'_>,
) -> Result<Verdict, LlmError> {
    let prompt = a.spec.prompt_of(check);
    let mut verdict = Verdict {
        check: check.name.to_owned(),
        expected: letter(check.expected),
        picks: Vec::new(),
        how: Vec::new(),
        pick: None,
        passed: false,
        none: false,
        unrelated: false,
        calls: Vec::new(),
    };
    let mut votes = Vec::new();
    for v in 0..a.spec.votes {
        let (picked, how, call) = ask_vote(a, q, check, prompt, v).await?;
        verdict.calls.push(call);
        votes.push(picked);
        verdict.picks.push(picked.map(letter));
        verdict.how.push(how.to_owned());
    }
    let pick = choice::majority(&votes);
    verdict.pick = pick.map(letter);
    verdict.passed = pick == Some(check.expected);
    // The none option follows the row's options.
    verdict.none = check.none_option && pick == Some(q.choices.len());
    Ok(verdict)
}

/// The messages of `q` asked with `check` from `prompt`, the row's options in `order`
/// ([`NONE_OPTION`] last where the check offers it), and the options as shown.
pub fn messages(
    env: &Env,
    prompt: &Prompt,
    q: Question<'_>,
    check: &Check<'_>,
    order: &[usize],
) -> Result<(Vec<Message>, Vec<String>), LlmError> {
    let mut shown: Vec<String> = order.iter().map(|i| q.choices[*i].clone()).collect();
    if check.none_option {
        shown.push(NONE_OPTION.to_owned());
    }
    let vars = minijinja::context! {
        role => "",
        instruction => "",
        examples => Vec::<String>::new(),
        context => check.context.unwrap_or(""),
        question => q.question,
        options => choice::option_views(&shown),
    };
    let messages = prompt
        .render(env, &vars)
        .map_err(|e| LlmError::Config(format!("cannot render prompt {e}")))?;
    Ok((messages, shown))
}

/// Vote `v` of a check (from 0; the first shows the options in the row's order, the others
/// in seeded orders; [`NONE_OPTION`] last where the check offers it): the option picked (in
/// the row's order, the none option after the row's), how it was read off the answer, and
/// the call.
async fn ask_vote(
    a: Asker<'_>,
    q: Question<'_>,
    check: &Check<'_>,
    prompt: &Prompt,
    v: u32,
) -> Result<(Option<usize>, &'static str, CallRecord), LlmError> {
    let n = q.choices.len();
    let order: Vec<usize> = if v == 0 {
        (0..n).collect()
    } else {
        choice::order(
            a.seed,
            a.scope,
            q.id,
            &format!("reader-{}-{v}", check.name),
            n,
        )
    };
    let (messages, shown) = messages(a.env, prompt, q, check, &order)?;
    // What the dry-run backend answers: the intended option, so an estimate counts every
    // check.
    let intended = order.iter().position(|i| *i == check.expected).unwrap_or(0);
    let call = choice::call(
        messages,
        (&prompt.name, &prompt.hash),
        q.id,
        None,
        Sampling {
            temperature: 0.0,
            max_tokens: a.spec.max_tokens,
        },
        letter(intended),
    );
    let c = a.reader.complete(&call).await?;
    let record = CallRecord {
        step: a.step.to_owned(),
        template: prompt.name.clone(),
        template_hash: prompt.hash.clone(),
        cache_key: c.cache_key.clone(),
        attempt: v + 1,
        prompt_tokens: c.prompt_tokens,
        completion_tokens: c.completion_tokens,
        model: None,
    };
    let x = if check.none_option {
        choice::extract_offering_none(&c.text, &shown)
    } else {
        choice::extract(&c.text, &shown)
    };
    let picked = x.choice.map(|i| order.get(i).copied().unwrap_or(n));
    Ok((picked, x.how, record))
}
