// A TypeDoc plugin for `npm run docs`. Every property of a named shape (an interface, a class, or a type
// alias of an object type, the options nested in it included) must have a comment, like the declarations
// TypeDoc's own `validation.notDocumented` checks. Properties TypeDoc expands inline, in a signature's
// inferred return type (a drizzle table, a valibot output), are left to the named type that declares them.
// And each entry point's module is named as it is imported (`outflow/sqlite`), not by its source path.
import { Application, Converter, ReflectionKind } from 'typedoc'

/** The import name of each entry point (package.json `exports`), by the module name TypeDoc derives from its path. */
const importNames = {
  src: 'outflow',
  'src/storage/sqlite': 'outflow/sqlite',
  'src/storage/postgres': 'outflow/postgres',
  'adapters/express': 'outflow/express',
  'adapters/hono': 'outflow/hono',
  'adapters/fastify': 'outflow/fastify',
  'adapters/nestjs': 'outflow/nestjs',
  'src/verify': 'outflow/verify',
  'src/prometheus': 'outflow/prometheus',
  'src/client': 'outflow/client',
}

/**
 * Whether a property belongs to a named shape: a member of an interface or class, or of the object type a
 * type alias names (not a type literal inside a conditional or mapped type), or of an object-typed property
 * of one (options nested in options).
 */
function inNamedShape(property) {
  const owner = property.parent
  if (!owner) return false
  if (owner.kindOf(ReflectionKind.Interface | ReflectionKind.Class)) return true
  if (!owner.kindOf(ReflectionKind.TypeLiteral)) return false
  const holder = owner.parent
  if (!holder || holder.type?.type !== 'reflection' || holder.type.declaration !== owner) return false
  if (holder.kindOf(ReflectionKind.TypeAlias)) return true
  return holder.kindOf(ReflectionKind.Property) && inNamedShape(holder)
}

/** @param {Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getReflectionsByKind(ReflectionKind.Module)) {
      if (importNames[module.name]) module.name = importNames[module.name]
      else app.logger.validationWarning(`the module ${module.name} has no import name in scripts/typedoc-named-properties.mjs`)
    }
  })
  app.on(Application.EVENT_VALIDATE_PROJECT, (project) => {
    if (!app.options.getValue('validation').notDocumented) return
    for (const property of project.getReflectionsByKind(ReflectionKind.Property)) {
      const symbol = project.getSymbolIdFromReflection(property)
      if (property.hasComment() || !symbol || symbol.packageName !== project.packageName || !inNamedShape(property)) continue
      app.logger.validationWarning(
        `${property.getFriendlyFullName()} (Property), defined in ${symbol.packagePath}, does not have any documentation`,
      )
    }
  })
}
