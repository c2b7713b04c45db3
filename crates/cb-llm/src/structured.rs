//! Structured output: how a step's JSON schema travels to the endpoint (`--structured`), and
//! finding out, once per endpoint and model, which form the endpoint takes.
//!
//! | form          | `response_format` sent                                              | servers |
//! |---------------|---------------------------------------------------------------------|---------|
//! | `json-schema` | `{"type": "json_schema", "json_schema": {"name", "strict", "schema"}}` | OpenAI, vLLM, llama.cpp `llama-server`, Ollama |
//! | `json-object` | `{"type": "json_object", "schema": ...}`                            | llama-cpp-python (`llama_cpp.server`) |
//! | `off`         | none: the prompt alone asks for JSON                                | anything |
//!
//! `auto` asks the remembered answer of the cache database (table `capabilities`, keyed by
//! endpoint identity and model); when there is none it sends a probe: a request whose prompt
//! asks for a greeting while its schema demands `{"ok": <boolean>}`. A server that enforces
//! the schema answers with that object; one that ignores `response_format` answers with a
//! greeting; one that does not take the form refuses it with an error naming
//! `response_format` (llama-cpp-python: HTTP 500 "Input should be 'text' or 'json_object'",
//! others 400 or 422). The first form enforced wins, else `off`; the answer is stored, so a
//! later build (another process) sends no probe. A remembered form that a server later
//! refuses on a real call is stepped down and the call sent again in the next form.
//!
//! The probe is paid from the run's budget like any call: reserved before it is sent (a
//! budget spent stops the run there, resumable), and refused with the call it is sent for
//! when the budget could not pay for both.
//!
//! `--batch` and `--pool` send no probe. With `--batch` the form is the one remembered for
//! the endpoint, else `json-schema` (the Batch API is OpenAI's, which enforces it); batch
//! input lines carry the body and key of an online call in that form; a result line that
//! refuses the form steps it down like a refused online call, and those requests go into the
//! next round in the lower form. A pool is one
//! endpoint for this purpose (identity `pool:NAME`, one form for all its members, which
//! serve the same model): it starts at the remembered form, else `json-schema`, and a
//! member refusing the form on a call steps the whole pool down, remembered under
//! `pool:NAME`, exactly as a single endpoint does.

use crate::form::{Form, Structured};
use crate::http::OpenAiHttp;
use crate::layer_core::Core;
use crate::request::ChatRequest;
use crate::{LlmError, Message};
use serde_json::{json, Value};

/// Whether `e` says "not this `response_format`": an error status whose body names
/// `response_format` (never 401/403/404/408/429, which mean something else). While probing,
/// a bare 400 or 422 counts too: the probe holds nothing else a server could object to.
pub(crate) fn refuses_form(e: &LlmError, probing: bool) -> bool {
    let LlmError::Status { status, body, .. } = e else {
        return false;
    };
    crate::rules::RULES
        .form_refusal
        .refuses(*status, body, probing)
}

/// The probe: the prompt asks for prose, the schema for `{"ok": <boolean>}`.
fn probe_request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user("Greet me in one short sentence.")],
        temperature: 0.0,
        top_p: None,
        max_tokens: 32,
        seed: None,
        response_schema: Some(json!({
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
            "additionalProperties": false,
        })),
        top_logprobs: None,
    }
}

/// Whether a probe answer follows the probe's schema (so the server enforced it).
fn follows_probe_schema(content: &str) -> bool {
    match serde_json::from_str::<Value>(content.trim()) {
        Ok(Value::Object(o)) => o.len() == 1 && o.get("ok").is_some_and(Value::is_boolean),
        _ => false,
    }
}

impl Core {
    /// The form a call is sent in (`Off` for a call without a schema: nothing to send).
    /// `online`: the one endpoint a layer's calls go to, which a form is probed on; a layer
    /// with another route (a pool, rounds, replay, a dry run) never probes.
    pub(crate) async fn form_for(
        &self,
        request: &ChatRequest,
        online: Option<&OpenAiHttp>,
    ) -> Result<Form, LlmError> {
        if request.response_schema.is_none() {
            return Ok(Form::Off);
        }
        match self.config.structured {
            Structured::Fixed(f) => Ok(f),
            Structured::Auto => self.detected_form(request, online).await,
        }
    }

    /// The form a call would be sent in now, without finding out (for [`Llm::key_of`]).
    pub(crate) fn form_now(&self, request: &ChatRequest) -> Form {
        match (&request.response_schema, self.config.structured) {
            (None, _) => Form::Off,
            (Some(_), Structured::Fixed(f)) => f,
            (Some(_), Structured::Auto) => self.form.get().unwrap_or(Form::JsonSchema),
        }
    }

    /// The form in use for schema calls: fixed, remembered, found out, or (replay and dry
    /// runs, which never probe) `json-schema` when nothing is remembered.
    pub(crate) fn structured_form(&self) -> Option<&'static str> {
        match self.config.structured {
            Structured::Fixed(f) => Some(f.name()),
            Structured::Auto => self.form.get().map(Form::name),
        }
    }

    async fn detected_form(
        &self,
        request: &ChatRequest,
        online: Option<&OpenAiHttp>,
    ) -> Result<Form, LlmError> {
        let state = &self.form;
        if let Some(f) = state.get() {
            return Ok(f);
        }
        let _one_at_a_time = state.detecting.lock().await;
        if let Some(f) = state.get() {
            return Ok(f);
        }
        let (endpoint, model) = (&self.endpoint, &self.config.model);
        let remembered = match &self.cache {
            Some(c) => c.capability(endpoint, model)?,
            None => None,
        };
        let form = match (remembered.as_deref().and_then(Form::parse), online) {
            (Some(f), _) => f,
            // Only online calls to one endpoint probe: a Batch API endpoint and an endpoint
            // pool start at `json-schema` (see the module text).
            (None, Some(http)) => {
                // A budget that cannot pay for the probe and the call it is sent for would
                // pay for the probe and stop: refused before either is sent.
                let (probe, call) = (self.most_of(&probe_request()), self.most_of(request));
                let both = (probe.0 + call.0, probe.1 + call.1);
                self.budget.admit(crate::budget::Ask::Check(both))?;
                let (f, how) = self.probe(http).await?;
                tracing::info!(endpoint = %endpoint, model = %model, form = f.name(), how = %how, "structured output form found out");
                if let Some(c) = &self.cache {
                    c.put_capability(endpoint, model, f.name(), &how)?;
                }
                f
            }
            (None, _) => Form::JsonSchema,
        };
        state.set(form);
        Ok(form)
    }

    /// Tries `json-schema`, then `json-object`; the first one the server enforces wins.
    async fn probe(&self, http: &OpenAiHttp) -> Result<(Form, String), LlmError> {
        let request = probe_request();
        let mut notes = Vec::new();
        for form in [Form::JsonSchema, Form::JsonObject] {
            // The probe is a call like any other: the budget pays for it before it is sent.
            let _reserved = self.reserve_call(&request)?;
            let body = request.body_as(&self.config.model, form);
            match self
                .send(
                    http,
                    &body,
                    (&request, "structured-output probe"),
                    form,
                    true,
                )
                .await
            {
                Ok(p) if follows_probe_schema(&p.content) => {
                    notes.push(format!("{} enforced", form.name()));
                    return Ok((form, notes.join("; ")));
                }
                Ok(p) => notes.push(format!(
                    "{} accepted but not enforced (answer {:?})",
                    form.name(),
                    p.content.chars().take(80).collect::<String>()
                )),
                Err(LlmError::FormRefused(m)) => {
                    notes.push(format!("{} refused: {m}", form.name()))
                }
                Err(e) => return Err(e),
            }
        }
        Ok((Form::Off, notes.join("; ")))
    }

    /// After a real call was refused in `form` (auto mode): step down, remember, go on.
    pub(crate) fn step_down(&self, form: Form, why: &str) -> Result<(), LlmError> {
        let next = {
            let mut known = self.form.known.lock().expect("form lock");
            if *known != Some(form) {
                return Ok(()); // another call stepped down already
            }
            *known = Some(form.next());
            form.next()
        };
        tracing::warn!(endpoint = %self.endpoint, from = form.name(), to = next.name(), "the endpoint refused a structured-output form: {why}");
        if let Some(c) = &self.cache {
            c.put_capability(
                &self.endpoint,
                &self.config.model,
                next.name(),
                &format!("{} refused on a call: {why}", form.name()),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_answers_are_judged_by_the_schema() {
        assert!(follows_probe_schema("{\"ok\": true}"));
        assert!(follows_probe_schema(" { \"ok\" : false }\n"));
        assert!(!follows_probe_schema("Hello! How are you today?"));
        assert!(!follows_probe_schema("{\"ok\": \"yes\"}"));
        assert!(!follows_probe_schema(
            "{\"ok\": true, \"greeting\": \"hi\"}"
        ));
        assert!(!follows_probe_schema("{\"ok\": tr"));
    }

    #[test]
    fn refusals_name_response_format() {
        let status = |status: u16, body: &str| LlmError::Status {
            status,
            retry_after: None,
            body: body.into(),
        };
        // llama-cpp-python 0.3.x answers json_schema with a 500 whose body names the field.
        let lcp = status(
            500,
            r#"{"detail":[{"loc":["body","response_format","type"],"msg":"Input should be 'text' or 'json_object'"}]}"#,
        );
        assert!(refuses_form(&lcp, false));
        assert!(!refuses_form(&status(500, "internal error"), false));
        assert!(refuses_form(&status(400, "bad request"), true));
        assert!(!refuses_form(&status(400, "bad request"), false));
        assert!(!refuses_form(&status(401, "response_format: no key"), true));
        assert!(!refuses_form(&status(429, "slow down"), true));
    }

    #[test]
    fn forms_send_the_schema_as_each_server_expects() {
        let s = json!({"type": "object"});
        assert_eq!(
            Form::JsonSchema.response_format(&s).unwrap()["json_schema"]["schema"],
            s
        );
        assert_eq!(
            Form::JsonObject.response_format(&s).unwrap(),
            json!({"type": "json_object", "schema": s})
        );
        assert_eq!(Form::Off.response_format(&s), None);
        assert_eq!(Form::parse("json-object"), Some(Form::JsonObject));
        assert_eq!(Form::JsonSchema.next(), Form::JsonObject);
        assert_eq!(Form::JsonObject.next(), Form::Off);
    }
}
