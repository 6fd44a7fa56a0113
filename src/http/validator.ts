/**
 * The schema validator of the /v1 routes: TypeBox's, checking before converting. The type
 * provider's own compiler runs Value.Convert on every query string and path parameter before
 * checking; ours are strings, which match as they come, and converting costs more than checking.
 * A value that fails the check is converted and checked again, so what passes (and the errors of
 * what does not) is exactly what the provider's compiler gives. Bodies are never converted.
 */
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { TLocalizedValidationError } from 'typebox/error';
import { Value } from 'typebox/value';

const fastifyErrors = (errors: readonly TLocalizedValidationError[]): FastifySchemaValidationError[] =>
  errors.map(({ keyword, instancePath, schemaPath, params, message }) => ({
    keyword,
    instancePath,
    schemaPath,
    params: { ...params },
    message,
  }));

export const checkFirstValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const validator = Compile(schema);
  return (value) => {
    // `true`, not `{ value }`: the value passed is the request's own, and Fastify writes a
    // `{ value }` back. Written back, `request.headers` turns into a setter's copy, and every
    // later read of it copies all the headers into a new object (Fastify's request.js).
    if (validator.Check(value)) return true;
    if (httpPart === 'body') return { error: fastifyErrors(validator.Errors(value)) };
    const converted = Value.Convert(schema, value);
    if (validator.Check(converted)) return { value: converted };
    return { error: fastifyErrors(validator.Errors(converted)) };
  };
};
