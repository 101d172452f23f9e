"""ValidatingAdmissionPolicy's machinery: policies and bindings followed in the store and compiled (source). The
plugin is minik.apiserver.admission.validating_policy."""
