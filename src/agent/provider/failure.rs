//! What a failed attempt means: try again (and after how long), ask again without the part a
//! server refused, or give up with an error that says what to fix. Invariant: pure, no I/O;
//! each adaptation flips one `Dialect` flag one way, so adapting cannot loop.

use std::time::Duration;

use super::error::{ProviderError, Refusal, classify_refusal, not_found_hint};
use super::request::Dialect;
use super::settings::ProviderSettings;

/// How one attempt ended when it did not produce a response.
#[derive(Debug)]
pub enum Failure {
    /// Worth another attempt, after the server's `Retry-After` if it sent one.
    Retry {
        why: String,
        retry_after: Option<Duration>,
        last: ProviderError,
    },
    /// The server refused a part of the request this client can leave out.
    Adapt(Dialect),
    Fatal(ProviderError),
}

/// What a non-2xx answer means, given what was asked (`dialect`).
pub fn refused(
    settings: &ProviderSettings,
    status: u16,
    message: String,
    retry_after: Option<Duration>,
    dialect: Dialect,
) -> Failure {
    let base_url = settings.base_url.clone();
    let model = settings.model.clone();
    let refusal = classify_refusal(&message);
    if refusal == Refusal::ToolsUnsupported && status != 401 && status != 403 {
        return Failure::Fatal(ProviderError::ToolsUnsupported {
            base_url,
            model,
            message,
        });
    }
    match status {
        401 | 403 => Failure::Fatal(ProviderError::Unauthorized {
            status,
            base_url,
            model,
            key_env: settings.api_key_env.clone(),
            key_sent: settings.api_key.is_some(),
            message,
        }),
        404 => Failure::Fatal(ProviderError::NotFound {
            hint: not_found_hint(&base_url, &model, &message),
            base_url,
            model,
            message,
        }),
        408 | 429 | 500..=599 => Failure::Retry {
            why: format!("HTTP {status}: {message}"),
            retry_after,
            last: ProviderError::GaveUp {
                status,
                base_url,
                attempts: 1,
                message,
            },
        },
        _ => match refusal {
            Refusal::StreamUnsupported if dialect.stream => Failure::Adapt(Dialect {
                stream: false,
                ..dialect
            }),
            Refusal::StreamOptionsUnsupported if dialect.stream && dialect.stream_usage => {
                Failure::Adapt(Dialect {
                    stream_usage: false,
                    ..dialect
                })
            }
            Refusal::MaxCompletionTokens if !dialect.max_completion_tokens => {
                Failure::Adapt(Dialect {
                    max_completion_tokens: true,
                    ..dialect
                })
            }
            _ => Failure::Fatal(ProviderError::Rejected {
                status,
                base_url,
                model,
                message,
            }),
        },
    }
}

/// The error to report once the attempts are used up, saying how many there were.
pub fn with_attempts(last: ProviderError, attempts: u32) -> ProviderError {
    match last {
        ProviderError::Unreachable {
            base_url, detail, ..
        } => ProviderError::Unreachable {
            base_url,
            attempts,
            detail,
        },
        ProviderError::GaveUp {
            status,
            base_url,
            message,
            ..
        } => ProviderError::GaveUp {
            status,
            base_url,
            attempts,
            message,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure in one line: what the client does next.
    fn next_step(failure: &Failure) -> String {
        match failure {
            Failure::Retry { retry_after, .. } => format!("retry after {retry_after:?}"),
            Failure::Adapt(d) => format!(
                "adapt stream={} usage={} mct={}",
                d.stream, d.stream_usage, d.max_completion_tokens
            ),
            Failure::Fatal(e) => {
                let debug = format!("{e:?}");
                format!("fatal {}", &debug[..debug.find(' ').unwrap_or(debug.len())])
            }
        }
    }

    #[test]
    fn every_status_and_refusal_has_one_next_step() {
        let settings = ProviderSettings::new("http://127.0.0.1:9/v1", "m");
        let fresh = Dialect::default();
        let adapted = Dialect {
            stream: false,
            stream_usage: false,
            max_completion_tokens: true,
        };
        let second = Some(Duration::from_secs(1));
        let cases = [
            (401, "bad key", fresh, None, "fatal Unauthorized"),
            (
                403,
                "does not support tools",
                fresh,
                None,
                "fatal Unauthorized",
            ),
            (404, "Not Found", fresh, None, "fatal NotFound"),
            (
                400,
                "model does not support tools",
                fresh,
                None,
                "fatal ToolsUnsupported",
            ),
            (
                500,
                "tools param requires --jinja flag",
                fresh,
                None,
                "fatal ToolsUnsupported",
            ),
            (408, "timeout", fresh, None, "retry after None"),
            (429, "slow down", fresh, second, "retry after Some(1s)"),
            (503, "busy", fresh, None, "retry after None"),
            (
                400,
                "stream is not supported",
                fresh,
                None,
                "adapt stream=false usage=true mct=false",
            ),
            (
                400,
                "stream is not supported",
                adapted,
                None,
                "fatal Rejected",
            ),
            (
                422,
                "stream_options: extra inputs are not permitted",
                fresh,
                None,
                "adapt stream=true usage=false mct=false",
            ),
            (
                400,
                "stream_options not allowed",
                adapted,
                None,
                "fatal Rejected",
            ),
            (
                400,
                "Use 'max_completion_tokens' instead of 'max_tokens'",
                fresh,
                None,
                "adapt stream=true usage=true mct=true",
            ),
            (
                400,
                "Use 'max_completion_tokens' instead of 'max_tokens'",
                adapted,
                None,
                "fatal Rejected",
            ),
            (
                400,
                "messages must not be empty",
                fresh,
                None,
                "fatal Rejected",
            ),
            (418, "teapot", fresh, None, "fatal Rejected"),
        ];
        for (status, message, dialect, retry_after, expected) in cases {
            let failure = refused(&settings, status, message.into(), retry_after, dialect);
            assert_eq!(next_step(&failure), expected, "{status} {message}");
        }
    }

    #[test]
    fn the_last_error_says_how_many_attempts_were_made() {
        let last = ProviderError::GaveUp {
            status: 503,
            base_url: "u".into(),
            attempts: 1,
            message: "busy".into(),
        };
        assert!(matches!(
            with_attempts(last, 4),
            ProviderError::GaveUp { attempts: 4, .. }
        ));
    }
}
