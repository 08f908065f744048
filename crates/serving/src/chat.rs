//! Chat messages into one prompt: the checkpoint's own chat template when it has one
//! (`tokenizer_config.json`'s `chat_template`, read by [`engine::loader::chat_template`]), else
//! the built-in transcript.
//!
//! Templates are Jinja written for Python's `jinja2`, as transformers' `apply_chat_template`
//! renders them. They are rendered here with `minijinja`, with what those templates lean on
//! added the way Hugging Face's TGI adds it: Python's string, list and dict methods
//! (`minijinja-contrib`'s `pycompat`: `.strip()`, `.startswith()`, `.split()`, `.items()`, ...),
//! `raise_exception(message)` (a template's way to refuse a conversation: the request is a 400
//! with its message), and jinja2's whitespace options (`trim_blocks`, `lstrip_blocks`). The
//! variables are transformers': `messages` (each with `role` and `content`),
//! `add_generation_prompt` (always true: the server asks for the assistant's next turn),
//! `bos_token` and `eos_token`.

use minijinja::{Environment, ErrorKind};
use serde_json::json;

use crate::api::Message;

/// How a server turns a conversation into a prompt.
pub enum ChatFormat {
    /// The checkpoint's template (boxed: one per server, and the enum stays small).
    Template(Box<Template>),
    /// No template: [`transcript`].
    Transcript,
}

impl ChatFormat {
    /// The template of `template` (compiled now, so a broken one stops the server at start with
    /// its file and line), or the transcript when the checkpoint has none.
    pub fn new(template: Option<engine::loader::ChatTemplate>) -> anyhow::Result<ChatFormat> {
        match template {
            None => Ok(ChatFormat::Transcript),
            Some(t) => Ok(ChatFormat::Template(Box::new(Template::new(t)?))),
        }
    }

    /// The prompt for `messages`; a template's refusal (`raise_exception`) or failure is the
    /// error's text.
    pub fn render(&self, messages: &[Message]) -> Result<String, String> {
        match self {
            ChatFormat::Template(t) => t.render(messages),
            ChatFormat::Transcript => Ok(transcript(messages)),
        }
    }

    /// What the startup line says about chats.
    pub fn describe(&self) -> String {
        match self {
            ChatFormat::Template(t) => {
                format!(
                    "chat prompts from the chat template of {}",
                    t.path.display()
                )
            }
            ChatFormat::Transcript => {
                "the checkpoint has no chat template (no chat_template in tokenizer_config.json, \
                 no tokenizer.chat_template in a GGUF): chat prompts are the built-in transcript \
                 (\"User: ...\\nAssistant:\")"
                    .to_string()
            }
        }
    }
}

/// A compiled chat template.
pub struct Template {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
    path: std::path::PathBuf,
}

const NAME: &str = "chat_template";

impl Template {
    pub fn new(t: engine::loader::ChatTemplate) -> anyhow::Result<Template> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_template_owned(NAME, t.source).map_err(|e| {
            anyhow::anyhow!(
                "{}: its chat_template does not compile{}: {e}; fix the template or remove it (chats then use the \
                 built-in transcript)",
                t.path.display(),
                e.line().map(|l| format!(" (line {l} of the template)")).unwrap_or_default()
            )
        })?;
        Ok(Template {
            env,
            bos_token: t.bos_token.unwrap_or_default(),
            eos_token: t.eos_token.unwrap_or_default(),
            path: t.path,
        })
    }

    pub fn render(&self, messages: &[Message]) -> Result<String, String> {
        let messages: Vec<serde_json::Value> = messages
            .iter()
            .map(|m| json!({ "role": m.role, "content": m.content }))
            .collect();
        let template = self.env.get_template(NAME).map_err(|e| e.to_string())?;
        template
            .render(minijinja::context! {
                messages => messages,
                add_generation_prompt => true,
                bos_token => self.bos_token,
                eos_token => self.eos_token,
            })
            .map_err(|e| match e.kind() {
                // The template's own words.
                ErrorKind::InvalidOperation if e.detail().is_some() => {
                    e.detail().unwrap_or_default().to_string()
                }
                _ => format!("the chat template of {} failed: {e}", self.path.display()),
            })
    }
}

/// `raise_exception(message)`: the template refuses the conversation.
fn raise_exception(message: String) -> Result<String, minijinja::Error> {
    Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
}

/// The built-in chat format, for checkpoints without a template (GPT-2 was not trained on
/// chats and has none): a plain transcript, one line per message with its role capitalised, and
/// a last line that cues the reply:
///
/// ```text
/// System: You are terse.
/// User: Hello
/// Assistant:
/// ```
pub fn transcript(messages: &[Message]) -> String {
    let mut text = String::new();
    for m in messages {
        let mut role = m.role.clone();
        if let Some(first) = role.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        text.push_str(&format!("{role}: {}\n", m.content));
    }
    text.push_str("Assistant:");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(source: &str) -> Template {
        Template::new(engine::loader::ChatTemplate {
            source: source.into(),
            bos_token: Some("<s>".into()),
            eos_token: Some("</s>".into()),
            path: "t/tokenizer_config.json".into(),
        })
        .unwrap()
    }

    fn msg(role: &str, content: &str) -> Message {
        Message {
            role: role.into(),
            content: content.into(),
        }
    }

    /// A template in the manner of the Llama and Qwen ones: a namespace carries the system
    /// message out of a loop, a loop over the turns with `loop.first`/`loop.last`, a refusal by
    /// `raise_exception` when turns do not alternate, Python string methods, and the assistant's
    /// cue only with `add_generation_prompt`.
    const TURNS: &str = r#"{{ bos_token }}
{%- set ns = namespace(system='', turns=0) %}
{%- for m in messages %}
  {%- if m.role == 'system' %}
    {%- set ns.system = m.content.strip() %}
  {%- else %}
    {%- if (m.role == 'user') != (ns.turns % 2 == 0) %}
      {{- raise_exception('turns must alternate user/assistant, starting with the user') }}
    {%- endif %}
    {%- set ns.turns = ns.turns + 1 %}
[{{ m.role.upper() }}]{% if loop.first or ns.turns == 1 %}{% if ns.system %} ({{ ns.system }}){% endif %}{% endif %} {{ m.content.strip() }}
{%- if m.role == 'assistant' %}{{ eos_token }}{% endif %}
  {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
[ASSISTANT]
{%- endif %}"#;

    #[test]
    fn a_template_with_namespaces_loops_and_string_methods_renders_the_conversation() {
        let t = template(TURNS);
        let out = t
            .render(&[
                msg("system", "  Be brief.  "),
                msg("user", " Hi "),
                msg("assistant", "Hello."),
                msg("user", "Why?"),
            ])
            .unwrap();
        // What Python's jinja2 renders (transformers' settings: trim_blocks, lstrip_blocks): the
        // `{%-` after each turn's line eats its newline.
        assert_eq!(
            out,
            "<s>[USER] (Be brief.) Hi[ASSISTANT] Hello.</s>[USER] Why?[ASSISTANT]"
        );
    }

    #[test]
    fn raise_exception_refuses_with_the_templates_own_message() {
        let t = template(TURNS);
        let e = t.render(&[msg("user", "a"), msg("user", "b")]).unwrap_err();
        assert_eq!(
            e,
            "turns must alternate user/assistant, starting with the user"
        );
    }

    #[test]
    fn python_methods_split_startswith_and_items_work_as_in_jinja2() {
        let t = template(
            "{% for m in messages %}{% if m.content.startswith('/') %}{{ m.content[1:].split(' ')|join(',') }}\
             {% else %}{% for k, v in {'r': m.role}.items() %}{{ k }}={{ v.title() }}{% endfor %}{% endif %};{% endfor %}",
        );
        assert_eq!(
            t.render(&[msg("user", "/a b c"), msg("tool", "x")])
                .unwrap(),
            "a,b,c;r=Tool;"
        );
    }

    #[test]
    fn a_broken_template_stops_the_start_naming_its_file() {
        let e = Template::new(engine::loader::ChatTemplate {
            source: "{% for m in messages %}".into(),
            bos_token: None,
            eos_token: None,
            path: "ckpt/tokenizer_config.json".into(),
        })
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("ckpt/tokenizer_config.json") && e.contains("does not compile"),
            "{e}"
        );
        // An unknown method is an error at render time, named.
        let e = template("{{ messages[0].content.nosuch() }}")
            .render(&[msg("user", "x")])
            .unwrap_err();
        assert!(e.contains("t/tokenizer_config.json"), "{e}");
    }

    #[test]
    fn without_a_template_chats_are_a_transcript() {
        let f = ChatFormat::new(None).unwrap();
        assert_eq!(
            f.render(&[msg("system", "Be brief."), msg("user", "Hi")])
                .unwrap(),
            "System: Be brief.\nUser: Hi\nAssistant:"
        );
        assert!(f.describe().contains("no chat template"));
    }
}
