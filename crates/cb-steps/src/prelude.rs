//! What every step module takes from cb-step.

pub(crate) use cb_model::Range;
pub(crate) use cb_step::params::{Param, ParamType};
pub(crate) use cb_step::{
    ask, clean_text_answer, extract_json, fields, schema, Files, Guesses, Item, Model, ModelBacked,
    ModelStep, Step, StepCtx, StepError, StepFailure, StepFuture, StepSpec,
};
