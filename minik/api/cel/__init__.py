"""CEL, the one implementation minik has: cel-expr-python (Google's C++ CEL runtime and its type checker) with
Kubernetes' libraries. CRD validation rules (minik.api.crdschema) compile and run here.

- env: ``new_env(variables, extensions, pool)`` (every environment has CEL's strings v2, optional, bindings,
  math and encoders extensions and Kubernetes' libraries), ``compile_program`` (CompileError worded as cel-go's
  issues, which Kubernetes puts after ``compilation failed: ``), ``run`` (an Outcome: the value, or the runtime's
  error in cel-go's words; never an exception);
- library, net: Kubernetes' libraries (lists, regex, sets, quantity, ip, cidr, url, isURL/isIP/isCIDR);
- values: the JSON -> CEL conversions beyond JSON itself (byte, duration, date and date-time strings).

Pure: no I/O; imports minik.api, the standard library and cel-expr-python.
"""

from minik.api.cel.env import CompileError, Outcome, T, compile_program, new_env, output_type, run

__all__ = ["CompileError", "Outcome", "T", "compile_program", "new_env", "output_type", "run"]
