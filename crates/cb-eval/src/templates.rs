//! The eval prompt templates ([`Templates`]).

use crate::error::EvalError;
use cb_llm::Message;
use cb_step::Prompt;

/// The eval prompt templates, loaded once.
pub(crate) struct Templates {
    env: minijinja::Environment<'static>,
}

impl Templates {
    pub fn new() -> Self {
        Templates {
            env: cb_step::template::environment(),
        }
    }

    /// The template `eval/{name}` of the prompt set.
    pub fn load(files: &cb_step::Files, name: &str) -> Result<Prompt, EvalError> {
        Prompt::load(files, &format!("eval/{name}")).map_err(|e| EvalError::Config(e.to_string()))
    }

    /// Renders a template into the conversation to send.
    pub fn render(&self, p: &Prompt, ctx: minijinja::Value) -> Result<Vec<Message>, EvalError> {
        p.render(&self.env, &ctx).map_err(EvalError::Config)
    }
}
