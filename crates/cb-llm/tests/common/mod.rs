//! What the layer's tests share.

use cb_llm::{Call, ChatRequest, Message};

/// A plain call: one user message `text` for item `item`, no schema.
pub fn question(text: String, item: String) -> Call {
    Call {
        request: ChatRequest {
            messages: vec![Message::user(text)],
            temperature: 0.0,
            top_p: None,
            max_tokens: 1000,
            seed: None,
            response_schema: None,
            top_logprobs: None,
        },
        template: "t.md".into(),
        template_hash: "h".into(),
        item,
        offline: "offline answer".into(),
    }
}
