"""Admission webhooks' machinery: the configurations followed in the store (config), matching, the HTTPS client,
the AdmissionReview (review) and one call with its failurePolicy (dispatch). The plugins are
minik.apiserver.admission.mutating_webhook and validating_webhook; minik.apiserver.admission.webhooks puts them
together."""
