CREATE TABLE "signing_keys" (
	"kid" text PRIMARY KEY NOT NULL,
	"public_key" text NOT NULL,
	"secret" text NOT NULL,
	"active" boolean,
	"created_at" timestamp (3) with time zone NOT NULL,
	"retires_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "signing_keys_active_idx" ON "signing_keys" USING btree ("active");