"""CEL, the one implementation minik has: cel-expr-python (Google's C++ CEL runtime and its type checker) with
Kubernetes' libraries. CRD validation rules (minik.api.crdschema) and admission expressions (webhooks'
matchConditions, ValidatingAdmissionPolicy: minik.api.matchconditions) both compile and run here.

- env: ``new_env(variables, extensions, pool)`` (every environment has CEL's strings v2, optional, bindings,
  math and encoders extensions and Kubernetes' libraries), ``compile_program`` (CompileError worded as cel-go's
  issues, which Kubernetes puts after ``compilation failed: ``), ``run`` (an Outcome: the value, or the runtime's
  error in cel-go's words; never an exception);
- library, net: Kubernetes' libraries (lists, regex, sets, quantity, ip, cidr, url, isURL/isIP/isCIDR);
- values: the JSON -> CEL conversions beyond JSON itself (byte, duration, date and date-time strings);
- types: Kubernetes' declared object types (AdmissionRequest, Namespace, the authorizer's, a policy's
  ``variables``) as protobuf messages, for the type checker;
- authz: the authorizer library, and the questions an evaluation asks the authorizer;
- admission: the declarations of admission expressions (object, oldObject, request, params, namespaceObject,
  variables, authorizer) and their compilation.

Pure: no I/O; imports minik.api, the standard library, cel-expr-python and protobuf.
"""

from minik.api.cel.env import CompileError, Outcome, T, compile_program, new_env, output_type, run

__all__ = ["CompileError", "Outcome", "T", "compile_program", "new_env", "output_type", "run"]
