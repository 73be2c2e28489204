CREATE TABLE "portal_codes" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"tenant_created_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "portal_codes_expires_idx" ON "portal_codes" USING btree ("expires_at");